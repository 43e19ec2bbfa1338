import sys

import ray_engine

sys.exit(ray_engine.main("vllm"))
