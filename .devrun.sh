source .whl/install.sh >/dev/null 2>&1; d=/opt/gcc/lib/gcc/x86_64-linux-gnu/13; [ -e $d/libstdc++.so ] || ln -sf /usr/lib/x86_64-linux-gnu/libstdc++.so.6 $d/libstdc++.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
python tools/bench_copy_reference.py --rows 1024 --cols 1024 --matmul 512 1024 2048 --repeat 20 > $R/ref.json 2> $R/ref.err
python tools/bench_polybench.py --out $R/pb --programs gemm,2mm,3mm,syrk,syr2k,covariance,correlation,cpp/covariance --repeat 10 --no-programs > $R/pb.log 2>&1
for n in 1024 2048; do python tools/bench_programs.py --out $R/g$n --repeat 10 --runs 1 -D NI=$n -D NJ=$n -D NK=$n --arg ni=$n --arg nj=$n --arg nk=$n polybench_inputs/gemm/gemm.cu > $R/g$n.log 2>&1; done
python tools/bench_programs.py --out $R/s2048 --repeat 10 --runs 1 -D NI=2048 -D NJ=2048 --arg ni=2048 --arg nj=2048 polybench_inputs/syrk/syrk.cu > $R/s2048.log 2>&1
python tools/bench_copy_reference.py --rows 1024 --cols 1024 --matmul 512 1024 2048 --repeat 20 > $R/ref_after.json 2>> $R/ref.err
cd $OUT && tar czf results.tgz r && rm -rf r
