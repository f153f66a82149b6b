#!/usr/bin/env bash
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"
timeout 150 python3 .gpu/cublas_odd.py 2>&1 | tee $OUT/cublas_odd.txt
