"""`trtllm-serve serve`'s command line as its click command reads it, no looser: the options of
tensorrt_llm/commands/serve.py (NVIDIA/TensorRT-LLM at 00209af1, the snapshot the search index
holds; the wheel cannot be installed here: PyPI's tensorrt-llm 1.2.1 is a placeholder that fetches
the real one from NVIDIA's own index). click matches option names exactly (no abbreviations, and
--tp-size is not --tp_size), a flag takes no value, an option needs one, MODEL is one positional;
anything else is click's usage error, exit 2."""

# option -> whether it takes a value (is_flag options take none)
OPTIONS = {
    **dict.fromkeys(
        [
            "--tokenizer", "--custom_tokenizer", "--host", "--port", "--backend", "--custom_module_dirs",
            "--log_level", "--max_beam_width", "--max_batch_size", "--max_num_tokens", "--max_seq_len",
            "--tensor_parallel_size", "--tp_size", "--pipeline_parallel_size", "--pp_size",
            "--context_parallel_size", "--cp_size", "--moe_expert_parallel_size", "--ep_size",
            "--moe_cluster_parallel_size", "--cluster_size", "--gpus_per_node", "--free_gpu_memory_fraction",
            "--kv_cache_free_gpu_memory_fraction", "--num_postprocess_workers", "--revision", "--config",
            "--extra_llm_api_options", "--reasoning_parser", "--tool_parser", "--metadata_server_config_file",
            "--server_role", "--otlp_traces_endpoint", "--disagg_cluster_uri", "--media_io_kwargs",
            "--chat_template",
        ],
        True,
    ),
    **dict.fromkeys(
        ["--trust_remote_code", "--fail_fast_on_attention_window_too_large", "--enable_chunked_prefill", "--help"],
        False,
    ),
}  # fmt: skip
INTEGERS = {"--port", "--max_beam_width", "--max_batch_size", "--max_num_tokens", "--max_seq_len", "--tp_size"}
INTEGERS |= {"--tensor_parallel_size", "--pipeline_parallel_size", "--pp_size", "--gpus_per_node"}


def problems(argv: list[str]) -> list[str]:
    """click's errors for `trtllm-serve serve ARGV` (what follows `serve`), [] when it parses."""
    found, positionals, i = [], [], 0
    while i < len(argv):
        token = argv[i]
        name, _, inline = token.partition("=")
        if not token.startswith("-") or token == "-":
            positionals.append(token)
        elif name not in OPTIONS:
            found.append(f"No such option: {name}")
        elif not OPTIONS[name] and inline:
            found.append(f"Option '{name}' does not take a value.")
        elif OPTIONS[name] and not inline:
            if i + 1 >= len(argv):
                found.append(f"Option '{name}' requires an argument.")
            else:
                i += 1
                inline = argv[i]
        if name in INTEGERS and inline and not inline.lstrip("-").isdigit():
            found.append(f"Invalid value for '{name}': {inline!r} is not a valid integer.")
        i += 1
    if not positionals:
        found.append("Missing argument 'MODEL'.")
    elif len(positionals) > 1:
        found.append(f"Got unexpected extra argument ({positionals[1]})")
    return found
