#!/usr/bin/env bash
# The irregular fixtures (testsuite/fixtures/irregular) as whole programs on the device:
# original and polycoal's output built with nvcc -O2 -arch=sm_90, run with the same
# arguments, their printed numbers side by side; the output also with the runtime forced
# to the shared and padded forms and with the remap's copies in 4 chunks.
#
#   tools/irregular_fixtures.sh DIR
#
# DIR holds <fixture>.out.cu for each fixture, written beforehand where polycoal runs:
#   for f in spmv_csr gather_permutation neighbour_list edge_list; do
#     polycoal transform testsuite/fixtures/irregular/$f.cu -o DIR/$f.out.cu; done
set -u
dir=$1
bin=$(mktemp -d)
for f in spmv_csr gather_permutation neighbour_list edge_list; do
  nvcc -O2 -arch=sm_90 -w testsuite/fixtures/irregular/$f.cu -o $bin/$f.orig &
  nvcc -O2 -arch=sm_90 -w -Itestsuite/fixtures/irregular $dir/$f.out.cu -o $bin/$f.new &
done
wait
run() {
  f=$1; shift
  a=$($bin/$f.orig "$@"); b=$(POLYCOAL_IRREGULAR_REPORT=1 $bin/$f.new "$@" 2>$bin/report)
  echo "$f $*: original [$a] output [$b] $(tr '\n' ' ' < $bin/report)"
  for v in shared padded; do
    c=$(POLYCOAL_IRREGULAR_VARIANT=$v $bin/$f.new "$@" 2>/dev/null); echo "  forced $v: [$c]"
  done
  c=$(POLYCOAL_IRREGULAR_CHUNKS=4 POLYCOAL_IRREGULAR_REPORT=1 $bin/$f.new "$@" 2>&1 | tr "\n" " ")
  echo "  remap in 4 chunks: [$c]"
}
run spmv_csr 0 200000; run spmv_csr 1 200000; run spmv_csr 2 200000
run spmv_csr 0 1048576
run gather_permutation 0 1000000; run gather_permutation 1 1000000; run gather_permutation 2 1000000
run neighbour_list 200000
run edge_list 200000 8
