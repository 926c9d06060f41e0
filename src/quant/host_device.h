// GUFO_HOST_DEVICE: marks small inline helpers (fp16 conversion, block unpacking) that host code
// and CUDA/HIP device code share, so both sides decode blocks with the same source.
// Header only; exercised through tests/unit/quant (host) and the CUDA op tests (device).
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define GUFO_HOST_DEVICE __host__ __device__
#else
#define GUFO_HOST_DEVICE
#endif
