// polycoal trace runtime: every global load and store of an instrumented kernel goes
// through pc_trace, which records (static id, dynamic id, block, thread, byte offset in
// its array) into a preallocated buffer with an atomic counter. The same text compiles
// for the GPU (nvcc) and for the CPU (after cpu_runtime.h). Only the first
// PC_TRACE_BLOCKS blocks (linear order, x fastest) are traced, and only the first
// PC_TRACE_CAP executions of each static id by each thread; the host defines both, and
// sizes the buffer so that it cannot overflow.
struct pc_trace_record { int sid; unsigned dyn; unsigned block; unsigned thread; long long offset; };
__device__ pc_trace_record* pc_trace_records;
__device__ unsigned long long pc_trace_count;
__device__ unsigned pc_trace_capped;

// Record sites sid .. sid + n - 1 (a load and a store for `X op= e`) of the address p.
template <typename T>
__device__ __forceinline__ T* pc_trace(int sid, int n, unsigned* dyn, const void* base, T* p) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (block >= PC_TRACE_BLOCKS) return p;
  unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  long long offset = (long long)((const char*)p - (const char*)base);
  for (int k = 0; k < n; ++k) {
    unsigned d = dyn[sid + k]++;
    if (d >= PC_TRACE_CAP) { pc_trace_capped = 1; continue; }
    unsigned long long at = atomicAdd(&pc_trace_count, 1ull);
    pc_trace_records[at] = pc_trace_record{sid + k, d, block, thread, offset};
  }
  return p;
}
