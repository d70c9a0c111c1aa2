source .whl/install.sh >/dev/null 2>&1; d=/opt/gcc/lib/gcc/x86_64-linux-gnu/13; [ -e $d/libstdc++.so ] || ln -sf /usr/lib/x86_64-linux-gnu/libstdc++.so.6 $d/libstdc++.so
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
for n in 4096 16384; do
  python tools/bench_copy_reference.py --rows $n --cols $n --repeat 20 > $R/copy_$n.json 2>> $R/copy.err
  python tools/bench_programs.py --out $R/tr$n --repeat 20 --runs 1 -D ROWS=$n -D COLS=$n --arg rows=$n --arg cols=$n testsuite/fixtures/transpose_tiles.cu:512,512 > $R/tr$n.log 2>&1
  python tools/bench_copy_reference.py --rows $n --cols $n --repeat 20 > $R/copy_${n}_after.json 2>> $R/copy.err
done
python -m polycoal transform -D ROWS=4096 -D COLS=4096 testsuite/fixtures/transpose_tiles.cu -o /tmp/tt.cu 2> $R/tt.err
nvcc -O3 -arch=sm_90 -w -DROWS=4096 -DCOLS=4096 /tmp/tt.cu -o /tmp/tt_new
M=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,gpu__time_duration.sum
timeout 240 ncu --kernel-name regex:transpose --metrics $M /tmp/tt_new 512 512 > $R/ncu_new.txt 2>&1
python tools/bench_polybench.py --out $R/pb --programs cpp/gramschmidt,cpp/covariance --repeat 10 > $R/pb.log 2>&1
cd $OUT && tar czf results.tgz r && rm -rf r
