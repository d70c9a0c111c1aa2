source .whl/install.sh >/dev/null 2>&1; d=/opt/gcc/lib/gcc/x86_64-linux-gnu/13; [ -e $d/libstdc++.so ] || ln -sf /usr/lib/x86_64-linux-gnu/libstdc++.so.6 $d/libstdc++.so
R=$OUT/r; mkdir -p $R
python tools/bench_polybench.py --out $R/pb --programs cpp/covariance --repeat 10 > $R/pb.log 2>&1
cd $OUT && tar czf results.tgz r && rm -rf r
