#!/bin/bash
# pair.sh ROUNDS [BLKSIM]: blksim real mode against fio, back to back on the
# same file, for the jobs of issue 7 (blockdev/realdev/FIO.md). fio goes
# first in odd rounds and blksim first in even ones. The file must have been
# created by blksim (blksim run --device file:$F,size=300m ... creates it).
#   F=/scratch/calib.dat RT=3 blockdev/realdev/testdata/pair.sh 5 ./blksim
set -u
R=${1:-3}
BLKSIM=${2:-blksim}
F=${F:?set F to the target file}
RT=${RT:-3}
C="--filename=$F --size=256m --direct=1 --bs=4k --runtime=$RT --time_based --group_reporting --name=j"
B="--device file:$F --set ext4.iomap_dio=true --name=j --filename=data --bs=4k --size=256m --direct=1 --runtime=$RT --time_based=1 --group_reporting"
iops() { grep -E '^\s+(read|write): IOPS' | sed -E 's/.*IOPS=([0-9.]+k?).*/\1/' | tr '\n' ' '; }
for r in $(seq "$R"); do
  for job in "randread --ioengine=psync" "randread --ioengine=io_uring --iodepth=32" \
             "randread --ioengine=libaio --iodepth=32" "randrw --ioengine=psync --numjobs=8"; do
    set -- $job
    rw=$1; shift
    extra=""
    [ "$rw" = randrw ] && extra="--refill_buffers" # fio would copy blksim's sector headers otherwise
    if [ $((r % 2)) = 1 ]; then
      f=$(fio $C --rw="$rw" "$@" $extra 2>&1 | iops)
      b=$($BLKSIM run $B --rw="$rw" "$@" 2>&1 | iops)
    else
      b=$($BLKSIM run $B --rw="$rw" "$@" 2>&1 | iops)
      f=$(fio $C --rw="$rw" "$@" $extra 2>&1 | iops)
    fi
    echo "round $r | $rw $* | fio $f | blksim $b | load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
