from diagnose.collect.procfs import (
    parse_cpu_list,
    parse_proc_stat_cpus,
    parse_sched_migrations,
    parse_schedstat,
    parse_stat,
    parse_syscall,
)

# A real /proc/PID/task/TID/stat line, with a hostile thread name containing ") R (".
STAT = (
    "4242 (evil) R (x y) S 1 4242 4242 0 -1 4194560 1030 0 3 0 15 7 0 0 20 0 6 0 "
    "63000 1000000 2338 18446744073709551615 1 1 0 0 0 0 0 16781312 16386 0 0 0 17 1 0 0 0 0 0"
)


def test_parse_stat_takes_comm_up_to_the_last_parenthesis():
    # GIVEN a comm that itself contains ") R ("  WHEN parsed
    st = parse_stat(STAT)
    # THEN the fields after the last ')' are read in the right places
    assert st.comm == "evil) R (x y"
    assert st.state == "S"
    assert (st.minflt, st.majflt, st.utime, st.stime) == (1030, 3, 15, 7)
    assert st.num_threads == 6
    assert st.rss_pages == 2338
    assert st.processor == 1


def test_schedstat_syscall_and_migrations():
    assert parse_schedstat("156960442 112338907 226\n") == (156960442, 112338907, 226)
    assert parse_syscall("202 0x55dfb168b9a0 0x89 0x0 0x0 0x0 0x0 0x7ffc 0x7f12\n") == (
        202,
        "0x55dfb168b9a0",
    )
    assert parse_syscall("running\n") == (None, "")
    assert parse_syscall("-1 0x7ffc 0x7f12\n") == (-1, "")
    sched = "python (123, #threads: 5)\n---\nse.exec_start : 1.0\nse.nr_migrations : 9\nnr_switches : 3\n"
    assert parse_sched_migrations(sched) == 9
    assert parse_sched_migrations("nothing here") is None


def test_cpu_lists_and_proc_stat():
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("") == []
    text = "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 30 10 0 0 0 0 0\nintr 1\n"
    assert parse_proc_stat_cpus(text) == {0: (10, 50), 1: (10, 50)}
