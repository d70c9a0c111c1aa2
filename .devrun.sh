source .whl/install.sh >/dev/null 2>&1; d=/opt/gcc/lib/gcc/x86_64-linux-gnu/13; [ -e $d/libstdc++.so ] || ln -sf /usr/lib/x86_64-linux-gnu/libstdc++.so.6 $d/libstdc++.so
R=$OUT/r; mkdir -p $R
python tools/bench_copy_reference.py --rows 1024 --cols 1024 --matmul 512 1024 2048 --repeat 20 > $R/ref.json 2> $R/ref.err
python tools/bench_polybench.py --out $R/pb --programs covariance,correlation,gemm,syrk --repeat 10 > $R/pb.log 2>&1
python tools/bench_programs.py --out $R/g2048 --repeat 10 --runs 1 -D NI=2048 -D NJ=2048 -D NK=2048 --arg ni=2048 --arg nj=2048 --arg nk=2048 polybench_inputs/gemm/gemm.cu > $R/g2048.log 2>&1
python tools/difftest.py --count 40 --seed 1500 --families affine transpose --options default --gpu --jobs 8 --out $R/dt --no-read-cache > $R/dt.log 2>&1
python tools/bench_copy_reference.py --rows 1024 --cols 1024 --matmul 512 1024 2048 --repeat 20 > $R/ref_after.json 2>> $R/ref.err
cd $OUT && tar czf results.tgz r && rm -rf r
