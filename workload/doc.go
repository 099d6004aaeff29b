// Package workload reads fio job files and runs their jobs on a simulated
// stack.
//
// # Job files
//
// Parse, ParseFile and ParseWith read fio 3.x job files: [global] sections
// anywhere (each changes the jobs after it), "include FILE" (relative to the
// including file; a cycle is an error), ';' and '#' comments, options with
// and without values, ${VAR} (undefined is empty), fio's keywords $pagesize,
// $ncpus and $mb_memory (the simulated host's, from ParseOptions.Host) with
// bc arithmetic, and fio's "(...)" expressions. Sizes take fio's suffixes
// exactly as fio 3.33 reads them (k, m, g, t, p and kb, mb, ... are powers
// of 1024; kib, mib, ... powers of 1000; kb_base=1000 flips both), times
// take us, ms, s, m, h and d. ParseCommandLine builds jobs from
// --NAME=VALUE options as fio's command line does, and
// ParseOptions.Overrides applies such options to every job of a file.
//
// The options blksim models, beyond the engine and depth options:
// name, description, rw/readwrite (with :N), rw_sequencer, rwmixread,
// rwmixwrite, bs/blocksize, bsrange/blocksize_range, bssplit,
// ba/blockalign (one other than a direction's smallest block size turns
// the random map off, as in fio), size (bytes or percent), filesize (a size or a range),
// io_size/io_limit, number_ios, offset/fileoffset and offset_increment
// (bytes or percent), fill_device/fill_fs, filename, directory,
// filename_format, nrfiles/nr_files, openfiles, file_service_type
// (roundrobin and random with :N, sequential, zipf, pareto, normal/gauss
// with their parameter and center), numjobs, thread, threads (fio's tiobench
// profile option, which fio ignores in job files), direct (jobs that
// share a file must agree on it, except on DAX), buffered (to
// reject it), runtime/timeout, time_based, ramp_time, startdelay (a time or
// a range), loops, randseed, randrepeat, norandommap, percentage_random,
// random_distribution (random, zipf, pareto, normal, zoned, zoned_abs),
// zonemode (none, and strided with zonesize, zonerange and zoneskip: IO
// of zonesize bytes in each zone of zonerange bytes, zones zoneskip
// apart, for one file with uniform random offsets, its zones within the
// job's region; zbd is rejected),
// random_generator, rate, rate_iops, rate_min/ratemin, rate_iops_min,
// rate_cycle/ratecycle, rate_process, io_submit_mode, fallocate (how a
// file whose first job writes it is set up: JobSpec.Fallocate),
// thinktime,
// thinktime_spin, thinktime_blocks, thinktime_blocks_type, bwavgtime,
// iopsavgtime, exitall,
// exit_what, stonewall/wait_for_previous, new_group, wait_for,
// group_reporting, verify (every checksum type; pattern is rejected),
// do_verify, verify_only, verify_fatal, verify_backlog,
// verify_backlog_batch, kb_base, create_serialize, exitall_on_error,
// continue_on_error (none, read, write, io, verify, all: an IO error
// of a covered type, if EIO or EILSEQ, is counted and the job goes on,
// as fio's td_non_fatal_error decides),
// gtod_reduce, disable_lat, disable_clat, disable_slat, percentile_list
// (sorted, printed with as many decimals as its most precise value, as
// fio's), clat_percentiles
// (lat_percentiles and slat_percentiles only as 0), unified_rw_reporting
// (none, mixed or both: the reports sum reads and writes into fio's
// "mixed" direction instead of, or after, the two), fio's log files
// (write_bw_log, write_lat_log, write_iops_log, write_hist_log,
// log_avg_msec, log_max_value, log_offset, log_prio, per_job_logs,
// log_hist_msec, log_hist_coarseness; see Logs below),
// disable_bw_measurement (fio 3.33 still takes its interval bandwidth
// samples with it; it stops a per-IO bandwidth log's), and, as accepted
// options that change nothing a simulation shows, log_entries (a
// log's first allocation), clocksource (one
// simulated clock),
// buffer_pattern, zero_buffers and scramble_buffers (data are stamps and
// no device model looks at contents). Every other option,
// and every engine but psync, sync, pvsync, libaio and io_uring, is an
// error naming the file, line and option: never silently ignored.
//
// # Running
//
// Run runs the jobs on a stack's engine as fio runs them: jobs start in
// file order, a stonewall job after every job before it and a wait_for job
// after the jobs it names, each startdelay after the start of the run;
// reporting groups are numbered as fio numbers them. Each job is fio's IO
// loop for its engine, loops times (or until its runtime, for time_based):
// an IO phase until size, io_size or number_ios is done, then, for a job
// with verify, a verify phase that reads back what it wrote and checks it
// (data are blksim's stamps, so the check is exact). As in fio 3.33, the
// first bad block is the job's error (EILSEQ) and ends it, the read
// counted, unless continue_on_error covers verify errors: each is then
// counted (total_err) and the job goes on, unless verify_fatal. The IO
// phases count for the runtime of the directions rw= names, the verify
// phases for the read runtime (fio's update_runtime). As in fio, a loop
// also ends, short of its size, when the job's file is used up (the next
// sequential IO, after any rw=MODE:N hole, does not fit, or the random map
// is exhausted); a time_based job with one file starts it over instead.
// The random map has a block per smallest block size: a random IO takes a
// free block, then a size that fits before the region's end, and is cut
// at the first block already visited, so with bsrange or bssplit a pass
// moves exactly the region's bytes, in IOs no larger than the free runs
// they start. As in fio, a randrw job whose directions have different
// smallest block sizes reads the map in each direction's own size, and
// the larger one's draws soon find no free block in the region: such a
// job ends early, short of its size.
// Rates, thinktime, exitall and the distributions follow fio's io_u.c and
// backend.c.
//
// A job with nrfiles=N has N files, named by filename_format ($filenum
// 0..N-1; default jobname.jobnum.filenum) unless filename= names its one
// file. size= is their total: each file gets size/N (the first files a
// block more while what does not divide lasts), unless filesize= sizes
// each file (a range draws a size per file); size then limits the bytes
// of a loop to at most the files' total, and offset= applies in every
// file. Before each IO the job chooses a file as file_service_type says
// (fio io_u.c get_next_file): roundrobin (the default) takes the files in
// turn, random draws one, each keeping it for :N IOs; sequential stays on
// a file until it is done; zipf, pareto and normal draw from fio's
// unhashed distributions over N<<10 values. A file is done when its region
// is used up (the next sequential IO does not fit, or its random map or
// lfsr pass is exhausted); the job then takes another, and the loop ends
// when every file is done, or at its size, whichever is first (with
// io_size, once its loops are done, the job goes over the files again,
// each round a loop of its own, while the bytes it moved, verify reads
// included, are short of io_size: fio's keep_running; time_based starts a
// new loop). With zipf, pareto and normal a used-up file starts over and the
// loop ends by its size. openfiles=M lets at most M files be open: a file
// opens when first chosen and closes when done and idle, and a choice of
// an unopened file while M are open is retried, after a completion if IO
// is in flight (fio's EBUSY). Every file has its own offsets, random map
// and distribution; verify reads back each file's writes, file by file;
// the atomicity oracle watches each file some job reads and some job
// writes; end_fsync fsyncs every file; fsync=N fsyncs the file of the Nth
// write (fio fsyncs the file it services next).
//
// Syncing follows fio 3.33's do_io, get_rw_ddir and keep_running: when
// the loop picks its next IO (after verify_backlog's reads, never in a
// verify phase), it is the sync of fsync=N or fdatasync=N if the writes
// issued (counted on across loops) are a multiple of N and the last IO to
// complete was not a sync; reads do not change that, so a mixed job syncs
// again after a read. The loop picks while the bytes issued over all
// loops are short of size (io_size) times loops, so the job's last write
// has no sync, a loop that another follows issues the sync due after its
// last write, and the next loop starts with it again (fio clears
// last_was_sync between loops). At the end of each loop (also when its
// runtime ran out) a job that writes fsyncs all its files with
// end_fsync=1, unless its last IO was a sync. Only the in-loop syncs are
// counted in the job's sync figures. number_ios counts verify reads, as
// fio's does.
//
// Each job also keeps fio's queue-depth accounting (JobResult.Depths) and
// issued counts (DirStats.Issued, SyncStats): a synchronous engine's IO is
// one unit in use and one call each to submit and reap it; an
// asynchronous engine counts the units in use each time its loop submits
// a batch, the IOs of each io_submit (or io_uring_enter) and the IOs of
// each reap.
//
// # Logs
//
// A job with write_bw_log, write_lat_log, write_iops_log or
// write_hist_log records fio 3.33's log files (Result.Logs; IOLog.WriteTo
// gives their text, and the blksim command writes them when the run
// ends). Their names are fio's: the option's value, or the job's name if
// it has none, then _bw, _lat, _slat, _clat, _iops or _clat_hist, then
// .N.log, N the job's number counting every job and clone of the run from
// 1 (group_reporting changes nothing), or just .log with per_job_logs=0,
// when the jobs of a name share one file. write_lat_log writes the lat,
// slat and clat logs, but not those disable_lat, disable_slat or
// disable_clat (or gtod_reduce) turn off; the slat log of a sync engine
// is empty, as fio's. Each line is "TIME, VALUE, DIR, BS, PRIO" (after
// BS the IO's offset with log_offset=1; PRIO is 0, or 0x0000 with
// log_prio=1, as blksim models no IO priorities): TIME in whole ms since
// the job's start (after ramp_time), latencies in ns, DIR 0 for reads
// and 1 for writes (syncs are never logged). Without log_avg_msec every
// IO whose latency is recorded (verify reads too) is an entry: its
// latency, its IOPS (1), or its bandwidth, bytes times 10^6 over its
// completion latency in ns; and, as in fio, the job's bandwidth (IOPS)
// samples are then taken per IO too. With log_avg_msec each direction of
// a latency log has windows of that many ms, each closed by the first
// value at or past its end into one entry at that value's time (the
// mean, rounded, or with log_max_value the largest; BS and offset 0),
// the next starting at the last multiple of log_avg_msec, and what is
// left becomes entries when the job ends; the bandwidth and IOPS logs
// take the job's interval samples, log_avg_msec apart unless bwavgtime
// (iopsavgtime) is given. The histogram log takes, per direction, an
// entry every log_hist_msec: "TIME, DIR, BS, " and the completions since
// the last entry in each of fio's 1856 latency buckets, 2^coarseness
// buckets added up per column.
//
// A run is deterministic: the same stack, engine seed and jobs give the
// same result.
package workload
