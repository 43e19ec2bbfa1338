#!/bin/bash
# lwsgen: exec the command in LWSGEN_SERVE_ARGV (a JSON array) argument by argument.
# trtllm-llmapi-launch joins its arguments into one string and runs it unquoted
# (tensorrt_llm/llmapi/trtllm-llmapi-launch: task_with_command="${@:1}"; $task_with_command), so an
# argument with a space or a glob character would be split or expanded; the serve command travels in
# the environment instead and only this script's path goes through trtllm-llmapi-launch.
set -euo pipefail
exec python3 -c 'import json, os; argv = json.loads(os.environ["LWSGEN_SERVE_ARGV"]); os.execvp(argv[0], argv)'
