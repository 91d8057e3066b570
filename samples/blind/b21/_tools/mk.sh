# usage: mk.sh NN  -> copies harness, builds locustfile from locust_task.py if present
d=/work/blind/b21/s$1
cp /work/blind/b21/_tools/harness.py $d/harness.py
if [ -f $d/.locust_task.py ]; then cat /work/blind/b21/_tools/locust_head.py $d/.locust_task.py > $d/locustfile.py; rm $d/.locust_task.py; fi
chmod +x $d/run.sh
