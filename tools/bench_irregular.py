#!/usr/bin/env python3
"""Reorganised irregular references measured on the device (needs nvcc; CuPy for the
cuSPARSE reference).

    python tools/bench_irregular.py --out DIR [--rows N] [--repeat R] [--ncu]

The fixtures testsuite/fixtures/irregular/spmv_csr.cu and gather_permutation.cu are
transformed by polycoal; a harness includes the original and the output, each in a
namespace of its own (their mains renamed), and drives their kernels and the output's
runtime directly:

- SpMV on CSR matrices of N rows (default 2^20), random columns, banded, skewed row
  lengths (the fixture's generators): the original kernel; the remap (the launch site's
  runtime calls: slice widths, offsets, the two copies), forced to rebuild each sample;
  the reorganised kernel reading the copies; the fixture's loop of ITERATIONS launches
  with the runtime deciding reuse (its builds counted); the outputs compared. Then the
  same matrix through CuPy (cupyx.scipy.sparse.csr_matrix @ x: cuSPARSE SpMV), timed
  in the same call, its output compared with the original's.
- Gathers through an index array of N elements (random permutation, neighbours swapped,
  64 threads per element): the original, the copies' builds, each kernel reading each
  variant (duplication, sharing, padding), and the selector's choice after its trials.
- The fixture's loop with the remap's copies filled on one stream (the default), and in
  4 chunks over 4 streams (POLYCOAL_IRREGULAR_CHUNKS=4), the median of 5 loops each;
  and the same loops waiting for each launch (a loop reading a result back each step),
  against the original's.
Each time is the median of R samples of one launch between CUDA events, after a
warm-up. Results: one JSON line per case and DIR/irregular.json; with --ncu, global load
sectors per request of each SpMV kernel under Nsight Compute.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)

from polycoal.frontend import read_program  # noqa: E402
from polycoal.transform import transform_program  # noqa: E402

FIXTURES = os.path.join(ROOT, "testsuite", "fixtures", "irregular")
ITERATIONS = 30
NCU_METRICS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
               "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum")

HARNESS = r"""
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <vector>
#include <algorithm>
#include <chrono>
#include <type_traits>
namespace original_spmv {
#define main original_spmv_main
#include "original_spmv.cu"
#undef main
}
namespace reorganised_spmv {
#define main reorganised_spmv_main
#include "reorganised_spmv.cu"
#undef main
}
namespace original_gather {
#define main original_gather_main
#include "original_gather.cu"
#undef main
}
#undef POLYCOAL_IRREGULAR_RUNTIME
#undef POLYCOAL_HOST_WRITES
namespace reorganised_gather {
#define main reorganised_gather_main
#include "reorganised_gather.cu"
#undef main
}

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

static int repeat = 20;

/* One run of `work` between two events on the default stream (ms). */
template <class F> static float once(F work)
{
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  work();
  cudaEventRecord(b);
  CHECK(cudaEventSynchronize(b));
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

/* The median of `repeat` single launches, after three warm-up launches (ms). */
template <class F> static float timed(F launch)
{
  for (int k = 0; k < 3; k++) launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int k = 0; k < repeat; k++)
    t.push_back(once(launch));
  CHECK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static unsigned next_random(unsigned *state)
{
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

template <class T> static double max_relative(const std::vector<T> &a, const std::vector<T> &b)
{
  double worst = 0;
  for (size_t i = 0; i < a.size(); i++) {
    double d = fabs((double)a[i] - (double)b[i]) / std::max(1e-6, fabs((double)a[i]));
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

static void spmv(int kind, int rows, const char *dump)
{
  const char *names[] = {"random", "banded", "skewed"};
  unsigned state = 12345u;
  std::vector<int> len(rows), ptr(rows + 1);
  long long nnz = 0;
  for (int i = 0; i < rows; i++) {
    len[i] = kind == 2 ? ((i % 97) == 0 ? 200 + next_random(&state) % 200 : 1 + next_random(&state) % 6)
                       : 4 + next_random(&state) % 13;
    nnz += len[i];
  }
  std::vector<int> col(nnz);
  std::vector<float> val(nnz), x(rows);
  ptr[0] = 0;
  for (int i = 0; i < rows; i++) {
    ptr[i + 1] = ptr[i] + len[i];
    for (int k = 0; k < len[i]; k++) {
      int c = kind == 1 ? (i - len[i] / 2 + k + rows) % rows : (int)(next_random(&state) % rows);
      col[ptr[i] + k] = c;
      val[ptr[i] + k] = 0.5f + (next_random(&state) % 100) / 100.0f;
    }
  }
  for (int i = 0; i < rows; i++) x[i] = 0.5f + (next_random(&state) % 1000) / 1000.0f;
  int *d_ptr, *d_col;
  float *d_val, *d_x, *d_y0, *d_y1;
  CHECK(cudaMalloc(&d_ptr, (rows + 1) * sizeof(int)));
  CHECK(cudaMalloc(&d_col, nnz * sizeof(int)));
  CHECK(cudaMalloc(&d_val, nnz * sizeof(float)));
  CHECK(cudaMalloc(&d_x, rows * sizeof(float)));
  CHECK(cudaMalloc(&d_y0, rows * sizeof(float)));
  CHECK(cudaMalloc(&d_y1, rows * sizeof(float)));
  CHECK(cudaMemcpy(d_ptr, ptr.data(), (rows + 1) * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_col, col.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_val, val.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_x, x.data(), rows * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_y0, 0xff, rows * sizeof(float)));
  CHECK(cudaMemset(d_y1, 0xff, rows * sizeof(float)));
  int threads = 256, blocks = (rows + threads - 1) / threads;
  float original = timed([&] {
    original_spmv::spmv_csr_scalar<<<blocks, threads>>>(rows, d_ptr, d_col, d_val, d_x, d_y0);
  });
  using namespace reorganised_spmv;
  polycoal_irregular_site &site = polycoal_irregular_sites[0];
  const long long *off = 0;
  const float *cval = 0;
  const int *ccol = 0;
  auto build = [&] {    /* the launch site's runtime calls, as the output writes them */
    off = polycoal_segments(site, d_ptr, (const int *)0, 0, (long long)rows, 30.0,
                            (const int *)d_col, (int)sizeof(float), 0);
    cval = polycoal_segment_copy(site, 0, d_val, d_ptr, (const int *)0, 0);
    ccol = polycoal_segment_copy(site, 1, d_col, d_ptr, (const int *)0, 0);
    if (!site.serve) off = 0;
  };
  /* the remap alone (its stages driven to the end, the host waiting), wall clock */
  auto remap_once = [&](bool copies) {
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    polycoal_irregular_wrote(d_ptr);
    do {
      if (copies) build();
      else polycoal_segments(site, d_ptr, (const int *)0, 0, (long long)rows, 30.0,
                            (const int *)d_col, (int)sizeof(float), 0);
    } while (site.stage != 4 && (copies || site.stage < 2));
    CHECK(cudaDeviceSynchronize());
    return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<float> r1, r2;
  for (int k = 0; k < repeat; k++) { r2.push_back(remap_once(false)); r1.push_back(remap_once(true)); }
  std::sort(r1.begin(), r1.end());
  std::sort(r2.begin(), r2.end());
  float remap = r1[r1.size() / 2], offsets = r2[r2.size() / 2];
  off = site.use ? site.offsets : 0;          /* the copies, whatever the trials say */
  cval = (const float *)site.copy[0];
  ccol = (const int *)site.copy[1];
  float reorganised = timed([&] {
    reorganised_spmv::spmv_csr_scalar<<<blocks, threads>>>(rows, d_ptr, d_col, d_val, d_x, d_y1,
                                                           off, cval, ccol);
  });
  /* the fixture's loop: ITERATIONS launches, each through the launch site's calls, from
     a new key (the remap in the loop); the median of 5, the copies' fills chunked over
     the site's streams (chunks 4) and on one stream (chunks 1, the default), in turn */
  long long builds = 0;          /* in the last loop */
  auto fixture_loop = [&](const char *chunks, bool wait) {
    setenv("POLYCOAL_IRREGULAR_CHUNKS", chunks, 1);
    CHECK(cudaDeviceSynchronize());
    polycoal_irregular_wrote(d_ptr);
    long long before = site.builds;
    float ms = once([&] {
      for (int it = 0; it < ITERATIONS; it++) {
        build();
        polycoal_irregular_time(site, 0, 0);
        reorganised_spmv::spmv_csr_scalar<<<blocks, threads>>>(rows, d_ptr, d_col, d_val, d_x,
                                                               d_y1, off, cval, ccol);
        polycoal_irregular_time(site, 1, 0);
        if (wait)             /* a loop that reads a result back each step */
          CHECK(cudaStreamSynchronize(0));
      }
    });
    unsetenv("POLYCOAL_IRREGULAR_CHUNKS");
    builds = site.builds - before;
    return ms;
  };
  std::vector<float> loops[4];     /* chunked, one stream; then both waiting each step */
  for (int k = 0; k < 5; k++)
    for (int v = 0; v < 4; v++)
      loops[v].push_back(fixture_loop(v % 2 ? "1" : "4", v >= 2));
  for (int v = 0; v < 4; v++)
    std::sort(loops[v].begin(), loops[v].end());
  float loop_chunked = loops[0][2], loop = loops[1][2];
  float waiting_chunked = loops[2][2], waiting = loops[3][2];
  /* the original, waiting each step */
  float waiting_original = once([&] {
    for (int it = 0; it < ITERATIONS; it++) {
      original_spmv::spmv_csr_scalar<<<blocks, threads>>>(rows, d_ptr, d_col, d_val, d_x, d_y0);
      CHECK(cudaStreamSynchronize(0));
    }
  });
  std::vector<float> y0(rows), y1(rows);
  CHECK(cudaMemcpy(y0.data(), d_y0, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(y1.data(), d_y1, rows * sizeof(float), cudaMemcpyDeviceToHost));
  printf("{\"case\": \"spmv\", \"matrix\": \"%s\", \"rows\": %d, \"nnz\": %lld, \"padded\": %lld, "
         "\"copies_used\": %d, \"original_ms\": %.5f, \"remap_ms\": %.5f, \"offsets_ms\": %.5f, \"reorganised_ms\": %.5f, "
         "\"iterations\": %d, \"loop_ms\": %.5f, \"loop_chunked_ms\": %.5f, \"waiting_loop_ms\": {\"original\": %.5f, \"one_stream\": %.5f, \"chunked\": %.5f}, \"builds_in_loop\": %lld, \"max_relative\": %.3g, "
         "\"trial_ms\": [%.5f, %.5f], \"kept_copies\": %d}\n",
         names[kind], rows, nnz, site.total, site.use, original, remap, offsets, reorganised, ITERATIONS,
         loop, loop_chunked, waiting_original, waiting, waiting_chunked, builds, max_relative(y0, y1), site.times[1], site.times[0],
         site.use);
  FILE *f = fopen(dump, "wb");
  fwrite(&rows, sizeof rows, 1, f);
  fwrite(&nnz, sizeof nnz, 1, f);
  fwrite(ptr.data(), sizeof(int), rows + 1, f);
  fwrite(col.data(), sizeof(int), nnz, f);
  fwrite(val.data(), sizeof(float), nnz, f);
  fwrite(x.data(), sizeof(float), rows, f);
  fwrite(y0.data(), sizeof(float), rows, f);
  fclose(f);
  cudaFree(d_ptr); cudaFree(d_col); cudaFree(d_val); cudaFree(d_x); cudaFree(d_y0); cudaFree(d_y1);
}

static void gather(int kind, int n)
{
  const char *names[] = {"permutation", "swapped", "duplicates"};
  unsigned state = 777u;
  std::vector<int> perm(n);
  std::vector<float> x(n);
  std::vector<double> table(n);
  int size = kind == 2 ? (n + 63) / 64 : n;
  for (int i = 0; i < n; i++) perm[i] = i;
  if (kind == 0)
    for (int i = n - 1; i > 0; i--) { int k = next_random(&state) % (i + 1); std::swap(perm[i], perm[k]); }
  else if (kind == 1)
    for (int i = 0; i + 1 < n; i += 2) { perm[i] = i + 1; perm[i + 1] = i; }
  else
    for (int i = 0; i < n; i++) perm[i] = next_random(&state) % size;
  for (int i = 0; i < n; i++) { x[i] = 0.25f * (i % 17); table[i] = 1.0 / (1 + i % 29); }
  float *d_x, *d_y0, *d_y1, *d_z0, *d_z1;
  double *d_t, *d_o0, *d_o1;
  int *d_p;
  CHECK(cudaMalloc(&d_x, size * sizeof(float)));
  CHECK(cudaMalloc(&d_y0, n * sizeof(float)));
  CHECK(cudaMalloc(&d_y1, n * sizeof(float)));
  CHECK(cudaMalloc(&d_z0, n * sizeof(float)));
  CHECK(cudaMalloc(&d_z1, n * sizeof(float)));
  CHECK(cudaMalloc(&d_p, n * sizeof(int)));
  CHECK(cudaMalloc(&d_t, size * sizeof(double)));
  CHECK(cudaMalloc(&d_o0, n * sizeof(double)));
  CHECK(cudaMalloc(&d_o1, n * sizeof(double)));
  CHECK(cudaMemcpy(d_x, x.data(), size * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_p, perm.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_t, table.data(), size * sizeof(double), cudaMemcpyHostToDevice));
  /* the allocations as the output's marks record them (the selector reads their sizes) */
  reorganised_gather::polycoal_irregular_wrote(d_x, size * sizeof(float));
  reorganised_gather::polycoal_irregular_wrote(d_t, size * sizeof(double));
  using namespace reorganised_gather;
  polycoal_irregular_site &s0 = polycoal_irregular_sites[0], &s1 = polycoal_irregular_sites[1],
                          &s2 = polycoal_irregular_sites[2], &s3 = polycoal_irregular_sites[3];
  int g = (n + 127) / 128, g2 = (n + 255) / 256;
  polycoal_gathered<float> cx, cp;
  polycoal_gathered<double> ct, cs;
  auto build = [&] {
    cx = polycoal_gather(s0, 0, (const float *)d_x, (const int *)d_p, 0, (long long)n, 10.0, 128u, (unsigned)g, 0, 1);
    ct = polycoal_gather(s1, 0, (const double *)d_t, (const int *)d_p, 0, (long long)n, 10.0, 256u, (unsigned)g2, 0, 1);
    cs = polycoal_gather(s2, 0, (const double *)d_t, (const int *)d_p, 0, (long long)n, 10.0, 0u, 0u, 0);
    /* permute: its only reads follow the index (one access pattern): reused often
       enough (MIN_REUSE["padding"]), its padded form is built too, for the trials */
    cp = polycoal_gather(s3, 0, (const float *)d_x, (const int *)d_p, 0, (long long)n, 60.0, 256u, (unsigned)g2, 0, 2);
  };
  float b0 = timed([&] { polycoal_irregular_wrote(d_p); build(); });
  /* one site's build: gather_axpy's (its copy), permute's (its copy and padded form) */
  float axpy_build = timed([&] { polycoal_irregular_wrote(d_p);
    polycoal_gather(s0, 0, (const float *)d_x, (const int *)d_p, 0, (long long)n, 10.0, 128u, (unsigned)g, 0, 1); });
  float permute_build = timed([&] { polycoal_irregular_wrote(d_p);
    polycoal_gather(s3, 0, (const float *)d_x, (const int *)d_p, 0, (long long)n, 60.0, 256u, (unsigned)g2, 0, 2); });
  /* the padded form of the other kernels is built only when asked for: once more with
     it, to measure it */
  setenv("POLYCOAL_IRREGULAR_VARIANT", "padded", 1);
  CHECK(cudaDeviceSynchronize());
  polycoal_irregular_wrote(d_p);
  float pad_build = once(build);
  polycoal_irregular_wrote(d_p);   /* again, into the buffers allocated by the first */
  float pad_rebuild = once(build);
  unsetenv("POLYCOAL_IRREGULAR_VARIANT");
  /* each variant, from the site's buffers; the shared form built here too where the
     selector does not build it (threads <= elements: not a candidate), to measure it */
  int candidates[3] = {s0.shareable, s1.shareable, s3.shareable};
  auto shared_form = [&](polycoal_irregular_site &site, auto *a, int block, int blocks) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(a)>>;
    if (site.shareable) return;
    T *u; int *slot, *count;
    CHECK(cudaMalloc(&u, (size_t)blocks * block * sizeof(T)));
    CHECK(cudaMalloc(&slot, (size_t)n * sizeof(int)));
    CHECK(cudaMalloc(&count, (size_t)blocks * sizeof(int)));
    polycoal_gather_share<<<blocks, block>>>(u, slot, count, a, (const int *)d_p, 0LL, (long long)n);
    site.copy[1] = u; site.copy[2] = slot; site.copy[3] = count;
  };
  shared_form(s0, (const float *)d_x, 128, g);
  shared_form(s1, (const double *)d_t, 256, g2);
  shared_form(s3, (const float *)d_x, 256, g2);
  CHECK(cudaDeviceSynchronize());
  const float *dup_x = (const float *)s0.copy[0], *dup_p = (const float *)s3.copy[0];
  const double *dup_t = (const double *)s1.copy[0], *dup_s = (const double *)s2.copy[0];
  /* validation: one launch of each variant from zeroed outputs, against the original */
  double worst = 0;
  std::vector<float> y0(n), y1(n), w0(n), w1(n);
  std::vector<double> z0(n), z1(n);
  for (int v = 0; v < 5; v++) {
    CHECK(cudaMemset(d_y1, 0, n * sizeof(float)));
    CHECK(cudaMemset(d_o1, 0, n * sizeof(double)));
    CHECK(cudaMemset(d_z1, 0, n * sizeof(float)));
    if (v == 0) {
      original_gather::gather_axpy<<<g, 128>>>(d_y1, d_x, d_p, 0.5f, n);
      original_gather::lookup<<<g2, 256>>>(d_o1, d_t, d_p, n);
      original_gather::permute<<<g2, 256>>>(d_z1, d_x, d_p, n);
    } else if (v == 1) {
      reorganised_gather::gather_axpy<<<g, 128>>>(d_y1, d_x, d_p, 0.5f, n, dup_x, 0, 0, 0, 0, 0, 0);
      reorganised_gather::lookup<<<g2, 256>>>(d_o1, d_t, d_p, n, dup_t, 0, 0, 0, 0, 0, 0);
      reorganised_gather::permute<<<g2, 256>>>(d_z1, d_x, d_p, n, dup_p, 0, 0, 0, 0, 0, 0);
    } else if (v == 2) {
      reorganised_gather::gather_axpy<<<g, 128>>>(d_y1, d_x, d_p, 0.5f, n, 0,
          (const float *)s0.copy[1], (const int *)s0.copy[2], (const int *)s0.copy[3], 0, 0, 0);
      reorganised_gather::lookup<<<g2, 256>>>(d_o1, d_t, d_p, n, 0,
          (const double *)s1.copy[1], (const int *)s1.copy[2], (const int *)s1.copy[3], 0, 0, 0);
      reorganised_gather::permute<<<g2, 256>>>(d_z1, d_x, d_p, n, 0,
          (const float *)s3.copy[1], (const int *)s3.copy[2], (const int *)s3.copy[3], 0, 0, 0);
    } else if (v == 4) {
      reorganised_gather::gather_axpy<<<g, 128>>>(d_y1, d_x, d_p, 0.5f, n, 0, 0, 0, 0,
          (const int *)s0.copy[4], (const float *)s0.copy[6], (const int *)s0.copy[5]);
      reorganised_gather::lookup<<<g2, 256>>>(d_o1, d_t, d_p, n, 0, 0, 0, 0,
          (const int *)s1.copy[4], (const double *)s1.copy[6], (const int *)s1.copy[5]);
      reorganised_gather::permute<<<g2, 256>>>(d_z1, d_x, d_p, n, 0, 0, 0, 0,
          (const int *)s3.copy[4], (const float *)s3.copy[6], (const int *)s3.copy[5]);
    } else {
      reorganised_gather::lookup_strided<<<64, 256>>>(d_o1, d_t, d_p, n, dup_s);
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(y1.data(), d_y1, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(z1.data(), d_o1, n * sizeof(double), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(w1.data(), d_z1, n * sizeof(float), cudaMemcpyDeviceToHost));
    if (v == 0) { y0 = y1; z0 = z1; w0 = w1; continue; }
    if (v == 3) {
      CHECK(cudaMemset(d_o1, 0, n * sizeof(double)));
      original_gather::lookup_strided<<<64, 256>>>(d_o1, d_t, d_p, n);
      CHECK(cudaMemcpy(z0.data(), d_o1, n * sizeof(double), cudaMemcpyDeviceToHost));
      worst = std::max(worst, max_relative(z0, z1));
      continue;
    }
    worst = std::max({worst, max_relative(y0, y1), max_relative(z0, z1), max_relative(w0, w1)});
  }
  float ax[4], lk[4], st[2], pm[4];
  ax[0] = timed([&] { original_gather::gather_axpy<<<g, 128>>>(d_y0, d_x, d_p, 0.5f, n); });
  ax[1] = timed([&] { reorganised_gather::gather_axpy<<<g, 128>>>(d_y1, d_x, d_p, 0.5f, n, dup_x, 0, 0, 0, 0, 0, 0); });
  ax[2] = timed([&] { reorganised_gather::gather_axpy<<<g, 128>>>(d_y1, d_x, d_p, 0.5f, n, 0,
      (const float *)s0.copy[1], (const int *)s0.copy[2], (const int *)s0.copy[3], 0, 0, 0); });
  ax[3] = timed([&] { reorganised_gather::gather_axpy<<<g, 128>>>(d_y1, d_x, d_p, 0.5f, n, 0, 0, 0, 0,
      (const int *)s0.copy[4], (const float *)s0.copy[6], (const int *)s0.copy[5]); });
  lk[0] = timed([&] { original_gather::lookup<<<g2, 256>>>(d_o0, d_t, d_p, n); });
  lk[1] = timed([&] { reorganised_gather::lookup<<<g2, 256>>>(d_o1, d_t, d_p, n, dup_t, 0, 0, 0, 0, 0, 0); });
  lk[2] = timed([&] { reorganised_gather::lookup<<<g2, 256>>>(d_o1, d_t, d_p, n, 0,
      (const double *)s1.copy[1], (const int *)s1.copy[2], (const int *)s1.copy[3], 0, 0, 0); });
  lk[3] = timed([&] { reorganised_gather::lookup<<<g2, 256>>>(d_o1, d_t, d_p, n, 0, 0, 0, 0,
      (const int *)s1.copy[4], (const double *)s1.copy[6], (const int *)s1.copy[5]); });
  pm[0] = timed([&] { original_gather::permute<<<g2, 256>>>(d_z0, d_x, d_p, n); });
  pm[1] = timed([&] { reorganised_gather::permute<<<g2, 256>>>(d_z1, d_x, d_p, n, dup_p, 0, 0, 0, 0, 0, 0); });
  pm[2] = timed([&] { reorganised_gather::permute<<<g2, 256>>>(d_z1, d_x, d_p, n, 0,
      (const float *)s3.copy[1], (const int *)s3.copy[2], (const int *)s3.copy[3], 0, 0, 0); });
  pm[3] = timed([&] { reorganised_gather::permute<<<g2, 256>>>(d_z1, d_x, d_p, n, 0, 0, 0, 0,
      (const int *)s3.copy[4], (const float *)s3.copy[6], (const int *)s3.copy[5]); });
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  st[0] = timed([&] { original_gather::lookup_strided<<<sms * 8, 256>>>(d_o0, d_t, d_p, n); });
  st[1] = timed([&] { reorganised_gather::lookup_strided<<<sms * 8, 256>>>(d_o1, d_t, d_p, n, dup_s); });
  /* the selector: the launch site's calls from a fresh key, the trials, the choice */
  polycoal_irregular_wrote(d_p);
  for (int it = 0; it < 10; it++) {
    build();
    polycoal_irregular_time(s0, 0, 0);
    reorganised_gather::gather_axpy<<<g, 128>>>(d_y1, d_x, d_p, 0.5f, n, cx.copy, cx.shared, cx.slot, cx.count, cx.order, cx.packed, cx.rank);
    polycoal_irregular_time(s0, 1, 0);
    polycoal_irregular_time(s1, 0, 0);
    reorganised_gather::lookup<<<g2, 256>>>(d_o1, d_t, d_p, n, ct.copy, ct.shared, ct.slot, ct.count, ct.order, ct.packed, ct.rank);
    polycoal_irregular_time(s1, 1, 0);
    polycoal_irregular_time(s3, 0, 0);
    reorganised_gather::permute<<<g2, 256>>>(d_z1, d_x, d_p, n, cp.copy, cp.shared, cp.slot, cp.count, cp.order, cp.packed, cp.rank);
    polycoal_irregular_time(s3, 1, 0);
  }
  CHECK(cudaDeviceSynchronize());
  const char *variants[] = {"original", "duplication", "sharing", "padding"};
  printf("{\"case\": \"gather\", \"index\": \"%s\", \"n\": %d, \"build_ms\": %.5f, "
         "\"build_with_padding_ms\": %.5f, \"rebuild_with_padding_ms\": %.5f, "
         "\"gather_axpy_build_ms\": %.5f, \"permute_build_ms\": %.5f, "
         "\"gather_axpy_ms\": {\"original\": %.5f, \"duplication\": %.5f, \"sharing\": %.5f, \"padding\": %.5f}, "
         "\"gather_axpy_chosen\": \"%s\", \"sharing_candidate\": [%d, %d, %d], "
         "\"lookup_ms\": {\"original\": %.5f, \"duplication\": %.5f, \"sharing\": %.5f, \"padding\": %.5f}, "
         "\"lookup_chosen\": \"%s\", "
         "\"lookup_strided_ms\": {\"original\": %.5f, \"duplication\": %.5f}, "
         "\"permute_ms\": {\"original\": %.5f, \"duplication\": %.5f, \"sharing\": %.5f, \"padding\": %.5f}, "
         "\"permute_chosen\": \"%s\", \"permute_padding_candidate\": %d, "
         "\"max_relative\": %.3g}\n",
         names[kind], n, b0, pad_build, pad_rebuild, axpy_build, permute_build, ax[0], ax[1], ax[2], ax[3], variants[s0.use ? s0.choice : 0],
         candidates[0], candidates[1], candidates[2],
         lk[0], lk[1], lk[2], lk[3], variants[s1.use ? s1.choice : 0], st[0], st[1],
         pm[0], pm[1], pm[2], pm[3], variants[s3.use ? s3.choice : 0], s3.paddable, worst);
  cudaFree(d_z0); cudaFree(d_z1); cudaFree(d_x); cudaFree(d_y0); cudaFree(d_y1); cudaFree(d_p); cudaFree(d_t); cudaFree(d_o0); cudaFree(d_o1);
}

int main(int argc, char **argv)
{
  const char *what = argv[1];
  int kind = atoi(argv[2]), n = atoi(argv[3]);
  repeat = atoi(argv[4]);
  if (!strcmp(what, "spmv"))
    spmv(kind, n, argv[5]);
  else
    gather(kind, n);
  return 0;
}
"""


def transformed(name: str) -> tuple[str, str]:
    path = os.path.join(FIXTURES, name)
    program = read_program(path)
    result = transform_program(program)
    assert result.text != program.text, f"{name}: nothing transformed"
    return program.text, result.text


def cusparse(dump: str, repeat: int) -> dict:
    import cupy
    import cupyx.scipy.sparse as sparse
    import numpy as np
    with open(dump, "rb") as f:
        rows = int(np.frombuffer(f.read(4), np.int32)[0])
        nnz = int(np.frombuffer(f.read(8), np.int64)[0])
        ptr = np.frombuffer(f.read(4 * (rows + 1)), np.int32)
        col = np.frombuffer(f.read(4 * nnz), np.int32)
        val = np.frombuffer(f.read(4 * nnz), np.float32)
        x = np.frombuffer(f.read(4 * rows), np.float32)
        y0 = np.frombuffer(f.read(4 * rows), np.float32)
    a = sparse.csr_matrix((cupy.asarray(val), cupy.asarray(col), cupy.asarray(ptr)),
                          shape=(rows, rows))
    xd = cupy.asarray(x)
    for _ in range(3):
        y = a @ xd
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        y = a @ xd
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    y = cupy.asnumpy(y)
    rel = float(np.max(np.abs(y - y0) / np.maximum(np.abs(y0), 1e-6)))
    return {"cusparse_ms": statistics.median(times), "cusparse_max_relative": rel}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", type=int, default=1 << 20)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--ranks", default="16", help="copy widths to measure: the k-th longest "
                    "run of each slice, comma-separated (the runtime's default: 16)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, fixture in (("spmv", "spmv_csr.cu"), ("gather", "gather_permutation.cu")):
            original, output = transformed(fixture)
            with open(os.path.join(tmp, f"original_{case}.cu"), "w") as f:
                f.write(original)
            with open(os.path.join(tmp, f"reorganised_{case}.cu"), "w") as f:
                f.write(output)
        harness = os.path.join(tmp, "harness.cu")
        with open(harness, "w") as f:
            f.write(HARNESS.replace("ITERATIONS", str(ITERATIONS)))
        exe = os.path.join(tmp, "harness")
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-std=c++17", "-w", harness, "-o", exe,
                        f"-I{tmp}"], check=True)
        for kind in range(3):
            dump = os.path.join(tmp, f"matrix{kind}.bin")
            for n, rank in enumerate(int(x) for x in args.ranks.split(",")):
                line = subprocess.run([exe, "spmv", str(kind), str(args.rows),
                                       str(args.repeat), dump], check=True,
                                      capture_output=True, text=True,
                                      env=dict(os.environ, POLYCOAL_IRREGULAR_RANK=str(rank))
                                      ).stdout
                r = json.loads(line)
                r["rank"] = rank
                if n == 0:
                    try:
                        r.update(cusparse(dump, args.repeat))
                    except Exception as error:    # CuPy missing: the rest still stands
                        r["cusparse_error"] = f"{type(error).__name__}: {error}"
                r["total_original_ms"] = ITERATIONS * r["original_ms"]
                print(json.dumps(r), flush=True)
                results.append(r)
        for kind in range(3):
            line = subprocess.run([exe, "gather", str(kind), str(args.rows), str(args.repeat)],
                                  check=True, capture_output=True, text=True).stdout
            r = json.loads(line)
            print(json.dumps(r), flush=True)
            results.append(r)
        if args.ncu:
            for kind in range(3):
                dump = os.path.join(tmp, f"ncu{kind}.bin")
                # the first 8 launches: the original kernel's 4, then the reorganised one's
                r = subprocess.run(["ncu", "--metrics", NCU_METRICS, "--csv", "-k",
                                    "regex:spmv_csr_scalar", "--launch-count", "8",
                                    exe, "spmv", str(kind),
                                    str(args.rows), "1", dump],
                                   capture_output=True, text=True)
                with open(os.path.join(args.out, f"ncu-spmv-{kind}.csv"), "w") as f:
                    f.write(r.stdout[-200000:])
    with open(os.path.join(args.out, "irregular.json"), "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "rows": args.rows,
                   "repeat": args.repeat, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
