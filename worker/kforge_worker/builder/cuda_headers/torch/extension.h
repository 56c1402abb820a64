// kforge's first attempt at a load_inline CUDA source (kforge_worker/builder/cuda_header_choice.py): the
// source's <torch/extension.h> resolved to <torch/types.h>, the header load_inline itself puts first
// in every CUDA source. A source that needs more of torch/extension.h does not compile against this
// one and is built again against torch's own.
#pragma once
#include <torch/types.h>
