"""Device experiment: the product kernel's variants against cuBLAS SGEMM (not kept)."""
import json, os, re, subprocess, sys
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.environ.get("OUT", "/tmp/out")
GEMM = os.path.join(ROOT, "polybench_inputs/gemm/gemm.cu")

def kernel_text(n, sizes):
    import uuid
    out = f"/tmp/gemm_{n}_{uuid.uuid4().hex}.cu"
    cmd = [sys.executable, "-m", "polycoal", "transform", GEMM, "-o", out,
           f"-DNI={n}", f"-DNJ={n}", f"-DNK={n}", "--sizes", f"gemm_kernel:{sizes}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    text = open(out).read()
    m = re.search(r"__global__ void[^\n]*gemm_kernel__pc_full", text) or \
        re.search(r"__global__ void[^\n]*gemm_kernel\(", text)
    s = m.start()
    depth, i = 0, text.index("{", s)
    while True:
        if text[i] == "{": depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0: break
        i += 1
    return re.sub(r"gemm_kernel\(", "gemm_kernel__pc_full(", text[s:i + 1], count=1)

def no_prologue_store(k):
    # c[x] *= (beta); acc = c[x];  ->  acc = c[x] * (beta);
    return re.sub(r"c\[(\(pc_j \+ \d+ \* pc_i\))\] \*= \(beta\);\s*pc_acc\[pc_a\]\[pc_b\] = c\[\(pc_j \+ \d+ \* pc_i\)\];",
                  r"pc_acc[pc_a][pc_b] = c[\1] * (beta);", k)

HARNESS = r'''
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cublas_v2.h>
#define DATA_TYPE float
KERNEL
int main() {
  const int n = NN;
  size_t bytes = (size_t)n * n * 4;
  std::vector<float> ha((size_t)n * n), hb((size_t)n * n), hc((size_t)n * n), r1((size_t)n * n), r2((size_t)n * n);
  for (size_t t = 0; t < ha.size(); t++) { ha[t] = (float)((t * 7) % 13) / 13.0f - 0.4f; hb[t] = (float)((t * 11) % 17) / 17.0f - 0.5f; hc[t] = (float)((t * 5) % 7) / 7.0f; }
  float *a, *b, *c; cudaMalloc(&a, bytes); cudaMalloc(&b, bytes); cudaMalloc(&c, bytes);
  cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice); cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice);
  float alpha = 1.5f, beta = 1.2f;
  dim3 grid(n / TJ, n / TI), block(16, 16);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ours, ref;
  for (int rep = 0; rep < 12; rep++) {
    cudaMemcpy(c, hc.data(), bytes, cudaMemcpyHostToDevice);
    cudaEventRecord(e0);
    gemm_kernel__pc_full<<<grid, block>>>(n, n, n, alpha, beta, a, b, c);
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (rep >= 2) ours.push_back(ms);
  }
  cudaMemcpy(r1.data(), c, bytes, cudaMemcpyDeviceToHost);
  cublasHandle_t h; cublasCreate(&h);
  for (int rep = 0; rep < 12; rep++) {
    cudaMemcpy(c, hc.data(), bytes, cudaMemcpyHostToDevice);
    cudaEventRecord(e0);
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, b, n, a, n, &beta, c, n);
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (rep >= 2) ref.push_back(ms);
  }
  cudaMemcpy(r2.data(), c, bytes, cudaMemcpyDeviceToHost);
  double maxrel = 0; for (size_t t = 0; t < r1.size(); t++) maxrel = std::max(maxrel, (double)fabs(r1[t] - r2[t]) / (1e-3 + fabs(r2[t])));
  std::sort(ours.begin(), ours.end()); std::sort(ref.begin(), ref.end());
  printf("{\"ours_ms\": %.5f, \"cublas_ms\": %.5f, \"ratio\": %.4f, \"maxrel\": %.3g, \"err\": \"%s\"}\n", ours[5], ref[5], ours[5] / ref[5], maxrel, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
'''

VARIANTS = [
    ("model", "tile=128,tall=256,threads=16,chunk=8,blocks=1", None),
    ("chunk16", "tile=128,tall=256,threads=16,chunk=16,blocks=1", None),
    ("noprologue", "tile=128,tall=256,threads=16,chunk=8,blocks=1", no_prologue_store),
    ("chunk16-noprologue", "tile=128,tall=256,threads=16,chunk=16,blocks=1", no_prologue_store),
    ("sq128b2", "tile=128,threads=16,chunk=8,blocks=2", None),
    ("sq128b2c16", "tile=128,threads=16,chunk=16,blocks=2", None),
    ("sq128b0", "tile=128,threads=16,chunk=8", None),
]
def build(job):
    n, name, sizes, edit = job
    k = kernel_text(n, sizes)
    if edit:
        k2 = edit(k); assert k2 != k, name; k = k2
    ti = 256 if "tall=256" in sizes else 128
    src = HARNESS.replace("KERNEL", k).replace("NN", str(n)).replace("TI", str(ti)).replace("TJ", "128")
    path = f"/tmp/exp_{name}_{n}.cu"
    open(path, "w").write(src)
    exe = path[:-3]
    b = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-Xptxas", "-v", path, "-o", exe, "-lcublas"], capture_output=True, text=True)
    regs = re.findall(r"Used (\d+) registers", b.stderr)
    spills = re.findall(r"(\d+) bytes spill stores", b.stderr)
    return job, exe if b.returncode == 0 else None, regs, spills, b.stderr[-1500:]

def main():
    import concurrent.futures
    os.makedirs(OUT, exist_ok=True)
    jobs = [(n, name, sizes, edit) for n in (2048, 4096) for name, sizes, edit in VARIANTS]
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        built = list(pool.map(build, jobs))
    results = []
    for (n, name, sizes, edit), exe, regs, spills, err in built:
        if exe is None:
            print(name, n, "BUILD FAIL", err); continue
        r = subprocess.run([exe], capture_output=True, text=True)
        try:
            rec = json.loads(r.stdout.strip().splitlines()[-1])
        except Exception:
            print(name, n, "RUN FAIL", r.stdout[-500:], r.stderr[-500:]); continue
        rec.update(variant=name, n=n, sizes=sizes, regs=regs, spills=spills)
        print(json.dumps(rec), flush=True)
        results.append(rec)
        if name in ("model", "sq128b2") and n == 4096 and os.environ.get("NCU"):
            nc = subprocess.run(["ncu", "--kernel-name", "regex:pc_full", "--launch-count", "1",
                                 "--section", "SpeedOfLight", "--section", "WarpStateStats",
                                 "--section", "ComputeWorkloadAnalysis", "--section", "Occupancy", exe],
                                capture_output=True, text=True)
            open(os.path.join(OUT, f"ncu_{name}_4096.txt"), "w").write(nc.stdout[-60000:] + nc.stderr[-5000:])
            sass = subprocess.run(["cuobjdump", "-sass", exe], capture_output=True, text=True)
            open(os.path.join(OUT, f"sass_{name}_4096.txt"), "w").write(sass.stdout[:3_000_000])
    json.dump(results, open(os.path.join(OUT, "gemm_exp.json"), "w"), indent=1)
main()
