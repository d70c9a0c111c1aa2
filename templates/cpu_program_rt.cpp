// polycoal whole-program CPU runtime: definitions (see cpu_program.h). Compiled once per
// runtime version and linked with every program.
#include "cpu_program.h"

#include <csignal>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

static const char* pc_kernel = "";        // the kernel running, for messages
static cudaError_t pc_last_error = cudaSuccess;

[[noreturn]] static void pc_die(int status, const char* what) {
  std::fflush(stdout);
  std::fprintf(stderr, "polycoal-cpu: %s (kernel %s, block %u,%u,%u thread %u,%u,%u)\n", what,
               pc_kernel, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
               threadIdx.z);
  std::fflush(stderr);
  _exit(status);
}

// ---------------------------------------------------------------- device memory
// [guard page][canary bytes][data][canary bytes up to the page end][guard page]
struct pc_allocation { char* base; size_t mapped; char* data; size_t bytes; };
static std::map<uintptr_t, pc_allocation>& pc_allocations() {
  static auto* m = new std::map<uintptr_t, pc_allocation>;   // never destroyed: exit checks it
  return *m; }
static const unsigned char PC_CANARY = 0xA5;
static size_t pc_page() { static size_t p = (size_t)sysconf(_SC_PAGESIZE); return p; }

static bool pc_canaries_intact(const pc_allocation& a) {
  char* lo = a.base + pc_page();
  char* hi = a.base + a.mapped - pc_page();
  for (char* c = lo; c < a.data; ++c) if ((unsigned char)*c != PC_CANARY) return false;
  for (char* c = a.data + a.bytes; c < hi; ++c) if ((unsigned char)*c != PC_CANARY) return false;
  return true;
}

static void pc_check_all_canaries() {
  for (auto& [k, a] : pc_allocations())
    if (!pc_canaries_intact(a)) {
      std::fflush(stdout);
      std::fprintf(stderr, "polycoal-cpu: a write outside a cudaMalloc allocation of %zu "
                   "bytes (canary bytes changed)\n", a.bytes);
      _exit(PC_EXIT_CANARY);
    }
}

static void pc_segv(int, siginfo_t* info, void*) {
  char msg[160];
  std::snprintf(msg, sizeof msg, "memory fault at %p (an access outside a cudaMalloc "
                "allocation, or a wild pointer)", info->si_addr);
  pc_die(PC_EXIT_FAULT, msg);
}

static void pc_install() {
  static bool done = false;
  if (done) return;
  done = true;
  static char altstack[1 << 16];
  stack_t ss{}; ss.ss_sp = altstack; ss.ss_size = sizeof altstack; sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_sigaction = pc_segv; sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  std::atexit(pc_check_all_canaries);
}

cudaError_t pc_malloc(void** p, size_t bytes) {
  pc_install();
  size_t page = pc_page();
  size_t body = (bytes + 16 + page - 1) / page * page;   // at least 16 canary bytes
  size_t mapped = body + 2 * page;
  char* base = (char*)mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) { *p = nullptr; return pc_last_error = cudaErrorMemoryAllocation; }
  mprotect(base, page, PROT_NONE);
  mprotect(base + mapped - page, page, PROT_NONE);
  std::memset(base + page, PC_CANARY, body);
  // the data ends at the guard page, rounded down to 16 bytes for alignment
  char* end = base + mapped - page;
  char* data = (char*)(((uintptr_t)(end - bytes)) & ~(uintptr_t)15);
  std::memset(data, 0, bytes);
  pc_allocations()[(uintptr_t)data] = {base, mapped, data, bytes};
  *p = data;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  auto& m = pc_allocations();
  auto it = m.find((uintptr_t)p);
  if (it == m.end()) pc_die(PC_EXIT_CUDA_ERROR, "cudaFree of a pointer cudaMalloc did not return");
  if (!pc_canaries_intact(it->second)) {
    std::fflush(stdout);
    std::fprintf(stderr, "polycoal-cpu: a write outside a cudaMalloc allocation of %zu bytes "
                 "(canary bytes changed)\n", it->second.bytes);
    _exit(PC_EXIT_CANARY);
  }
  munmap(it->second.base, it->second.mapped);
  m.erase(it);
  return cudaSuccess;
}

static const pc_allocation* pc_find(const void* p) {
  auto& m = pc_allocations();
  auto it = m.upper_bound((uintptr_t)p);
  if (it == m.begin()) return nullptr;
  --it;
  const pc_allocation& a = it->second;
  if ((const char*)p >= a.data && (const char*)p <= a.data + a.bytes) return &a;
  return nullptr;
}

static void pc_check_device_range(const void* p, size_t bytes, const char* what) {
  const pc_allocation* a = pc_find(p);
  if (a == nullptr || (const char*)p + bytes > a->data + a->bytes) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s: %zu bytes at %p are not inside one cudaMalloc "
                  "allocation", what, bytes, p);
    pc_die(PC_EXIT_CUDA_ERROR, msg);
  }
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
    pc_check_device_range(dst, bytes, "cudaMemcpy destination");
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice)
    pc_check_device_range(src, bytes, "cudaMemcpy source");
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  pc_check_device_range(p, bytes, "cudaMemset");
  std::memset(p, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaGetLastError() { cudaError_t e = pc_last_error; pc_last_error = cudaSuccess; return e; }
cudaError_t cudaPeekAtLastError() { return pc_last_error; }

// ---------------------------------------------------------------- fibers
namespace {
struct Barrier {
  unsigned expected = 0, arrived = 0;
  unsigned long long generation = 0;
};
struct Fiber {
  ucontext_t context;
  uint3 tid;
  unsigned lane, warp;
  bool done = false;
  Barrier* waiting = nullptr;          // the barrier it waits at
  unsigned long long generation = 0;   // ... and its generation
};
struct Warp {
  Barrier barrier;
  unsigned char slots[32][16];
  unsigned ballot = 0;
};
}  // namespace

static bool pc_in_fibers = false;
static std::vector<Fiber> pc_fibers;
static std::vector<Warp> pc_warps;
static Barrier pc_block;
static int pc_block_reduce = 0;   // __syncthreads_count/and/or accumulator
static int pc_block_result = 0;
static Fiber* pc_current = nullptr;
static ucontext_t pc_scheduler;
static std::vector<char*> pc_stacks;
static const size_t PC_STACK = 256 * 1024;
static pc_body_fn pc_body;
static void* pc_closure;

static void pc_fiber_main() {
  pc_body(pc_closure);
  Fiber* f = pc_current;
  f->done = true;
  // a finished thread no longer holds the others back
  Warp& w = pc_warps[f->warp];
  for (Barrier* b : {&pc_block, &w.barrier}) {
    b->expected--;
    if (b->expected > 0 && b->arrived == b->expected) {
      b->arrived = 0; b->generation++;
    }
  }
  // returning resumes uc_link (the scheduler)
}

// Suspend the current fiber at `b` until every live member has arrived.
static void pc_arrive(Barrier& b) {
  Fiber* f = pc_current;
  b.arrived++;
  if (b.arrived == b.expected) { b.arrived = 0; b.generation++; return; }
  f->waiting = &b;
  f->generation = b.generation;
  swapcontext(&f->context, &pc_scheduler);
  f->waiting = nullptr;
}

static void pc_require_fibers(const char* what) {
  if (!pc_in_fibers) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s in a kernel the runtime runs thread by thread "
                  "(polycoal/runtime/cpu_program.py did not see it synchronise)", what);
    pc_die(PC_EXIT_SYNC_IN_SEQUENTIAL, msg);
  }
}

void __syncthreads() { pc_require_fibers("__syncthreads"); pc_arrive(pc_block); }

static int pc_sync_reduce(int v, int op) {
  pc_require_fibers("__syncthreads_count");
  // first barrier: everyone contributes; second: everyone has read the result
  if (pc_block.arrived == 0) pc_block_reduce = op == 1 ? 1 : 0;
  if (op == 0) pc_block_reduce += v != 0;
  else if (op == 1) pc_block_reduce = pc_block_reduce && v;
  else pc_block_reduce = pc_block_reduce || v;
  pc_arrive(pc_block);
  pc_block_result = pc_block_reduce;
  int r = pc_block_result;
  pc_arrive(pc_block);
  return r;
}
int __syncthreads_count(int v) { return pc_sync_reduce(v, 0); }
int __syncthreads_and(int v) { return pc_sync_reduce(v, 1); }
int __syncthreads_or(int v) { return pc_sync_reduce(v, 2); }

void __syncwarp(unsigned) {
  pc_require_fibers("__syncwarp");
  pc_arrive(pc_warps[pc_current->warp].barrier);
}

unsigned pc_lane() { return pc_in_fibers ? pc_current->lane : 0; }

void pc_exchange(const void* mine, void* out, size_t size, int source) {
  pc_require_fibers("a warp shuffle");
  Warp& w = pc_warps[pc_current->warp];
  std::memcpy(w.slots[pc_current->lane], mine, size);
  pc_arrive(w.barrier);
  if (source >= 0 && source < 32) std::memcpy(out, w.slots[source], size);
  pc_arrive(w.barrier);
}

unsigned pc_ballot(int predicate) {
  pc_require_fibers("a warp vote");
  Warp& w = pc_warps[pc_current->warp];
  if (w.barrier.arrived == 0) w.ballot = 0;
  if (predicate) w.ballot |= 1u << pc_current->lane;
  pc_arrive(w.barrier);
  unsigned r = w.ballot;
  pc_arrive(w.barrier);
  return r;
}

unsigned __activemask() {
  if (!pc_in_fibers) return 1u;
  unsigned m = 0;
  Fiber* f = pc_current;
  for (Fiber& g : pc_fibers) if (g.warp == f->warp && !g.done) m |= 1u << g.lane;
  return m;
}

// POLYCOAL_CPU_ORDER=reverse runs blocks and threads in the reverse order: a result that
// changes with the order comes from a race (or from reassociated atomics)
static bool pc_reverse() {
  static int r = -1;
  if (r < 0) { const char* e = std::getenv("POLYCOAL_CPU_ORDER"); r = e && !std::strcmp(e, "reverse"); }
  return r == 1;
}

static void pc_run_block_fibers(unsigned n) {
  while (pc_stacks.size() < n) {
    char* s = (char*)mmap(nullptr, PC_STACK, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) pc_die(PC_EXIT_CUDA_ERROR, "out of memory for thread stacks");
    pc_stacks.push_back(s);
  }
  pc_fibers.assign(n, Fiber{});
  unsigned nwarps = (n + 31) / 32;
  pc_warps.assign(nwarps, Warp{});
  pc_block = Barrier{};
  pc_block.expected = n;
  for (unsigned w = 0; w < nwarps; ++w) pc_warps[w].barrier.expected = std::min(32u, n - 32 * w);
  for (unsigned t = 0; t < n; ++t) {
    Fiber& f = pc_fibers[t];
    f.tid = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
    f.lane = t % 32; f.warp = t / 32;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = pc_stacks[t];
    f.context.uc_stack.ss_size = PC_STACK;
    f.context.uc_link = &pc_scheduler;
    makecontext(&f.context, pc_fiber_main, 0);
  }
  unsigned live = n;
  while (live > 0) {
    bool progress = false;
    for (unsigned u = 0; u < n; ++u) {
      Fiber& f = pc_fibers[pc_reverse() ? n - 1 - u : u];
      if (f.done) continue;
      if (f.waiting && f.waiting->generation == f.generation) continue;   // still blocked
      pc_current = &f;
      threadIdx = f.tid;
      swapcontext(&pc_scheduler, &f.context);
      progress = true;
      if (f.done) --live;
    }
    if (!progress) {
      for (Fiber& g : pc_fibers) if (!g.done) { threadIdx = g.tid; break; }
      pc_die(PC_EXIT_DEADLOCK, "deadlock: threads wait at a barrier that the other threads "
             "of the block or warp never reach");
    }
  }
  pc_current = nullptr;
}

size_t pc_raised_shared = 0;       // cudaFuncSetAttribute's largest dynamic shared memory

void pc_run_grid(bool synchronising, dim3 grid, dim3 block, size_t shared, const char* name,
                 pc_body_fn body, void* closure) {
  pc_install();
  pc_kernel = name;
  if (const char* log = std::getenv("POLYCOAL_CPU_LAUNCH_LOG")) {   // which kernels ran
    if (FILE* f = std::fopen(log, "a")) { std::fprintf(f, "%s\n", name); std::fclose(f); }
  }
  unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 ||
      block.z == 0 || threads > 1024 || block.z > 64 || grid.y > 65535 || grid.z > 65535 ||
      grid.x > 2147483647u || shared > std::max<size_t>(48 * 1024, pc_raised_shared)) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "invalid launch configuration: grid %u,%u,%u block %u,%u,%u "
                  "dynamic shared %zu (CUDA would not run the kernel)", grid.x, grid.y, grid.z,
                  block.x, block.y, block.z, shared);
    pc_die(PC_EXIT_BAD_LAUNCH, msg);
  }
  gridDim = grid; blockDim = block;
  pc_body = body; pc_closure = closure;
  const bool rev = pc_reverse();
  for (unsigned bz0 = 0; bz0 < grid.z; ++bz0)
    for (unsigned by0 = 0; by0 < grid.y; ++by0)
      for (unsigned bx0 = 0; bx0 < grid.x; ++bx0) {
        unsigned bx = rev ? grid.x - 1 - bx0 : bx0, by = rev ? grid.y - 1 - by0 : by0,
                 bz = rev ? grid.z - 1 - bz0 : bz0;
        blockIdx = {bx, by, bz};
        if (synchronising) {
          pc_in_fibers = true;
          pc_run_block_fibers((unsigned)threads);
          pc_in_fibers = false;
          continue;
        }
        for (unsigned tz0 = 0; tz0 < block.z; ++tz0)
          for (unsigned ty0 = 0; ty0 < block.y; ++ty0)
            for (unsigned tx0 = 0; tx0 < block.x; ++tx0) {
              threadIdx = {rev ? block.x - 1 - tx0 : tx0, rev ? block.y - 1 - ty0 : ty0,
                           rev ? block.z - 1 - tz0 : tz0};
              body(closure);
            }
      }
  pc_kernel = "";
}
