//! `iopath bench` as a user runs it: `bench journal` prints the JSON the issue asks for on
//! stdout and, not on a terminal, one progress line per phase on stderr; with `--svg` it draws
//! its runs.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use iopath_plot::check::Drawing;

mod common;
use common::iopath;

/// A directory on the build's file system (target/tmp), where O_DIRECT works; /tmp may be tmpfs.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn bench_journal_draws_its_runs_as_an_svg_plot() {
    let dir = scratch();
    let svg = dir.path().join("runs.svg");
    let output = iopath()
        .args(["bench", "journal"])
        .args(["--threads", "1", "--objects", "1", "--request-size", "64k"])
        .args(["--mib-per-object", "1", "--no-fio", "--runs", "2", "--svg"])
        .arg(&svg)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let drawing = Drawing::read_clean(&std::fs::read_to_string(&svg).unwrap())
        .unwrap_or_else(|e| panic!("{e}"));
    // The baseline, sync and async: a point per run each.
    assert_eq!(drawing.series.len(), 3);
    assert!(drawing.series.iter().all(|s| s.points.len() == 2));
}

#[test]
fn bench_journal_prints_json_and_a_progress_line_per_phase() {
    let dir = scratch();
    let output = iopath()
        .args(["bench", "journal"])
        .args(["--threads", "1", "--objects", "1", "--request-size", "64k"])
        .args(["--mib-per-object", "1", "--no-fio", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["disk"], "real");
    assert!(json["async_ratio"].as_f64().unwrap() > 0.0, "{json}");
    // Not a terminal: one progress line per phase on stderr.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("OST, internal journal, async commits (run 1): 1/1 MiB"),
        "{stderr}"
    );
}

/// The random-write line of a published IOR benchmark script, flags unchanged (its sizes
/// made small):
///
/// ```text
/// $IOR_BIN -v -F --posix.odirect -C -t $TRANSFER_SIZE -b $BLOCKSIZE_PER_TASK -e -w -z -k \
///     -o $TEST_DIRECTORY/$TEST_FILE -O summaryFile=$OUT_FILE -O summaryFormat=CSV
/// RESULTS=$(tail -1 $OUT_FILE)
/// ```
///
/// The script keeps `tail -1` of the summary file as a row under IOR's CSV header; here that
/// row parses with IOR's columns, and the log lines (`-v`) stay out of it.
#[test]
fn a_published_ior_line_runs_unchanged_and_its_csv_parses_with_iors_columns() {
    let dir = scratch();
    let out_file = dir.path().join("rand_write_64k_4.csv");
    let output = iopath()
        .args(["bench", "ior"])
        .args([
            "-v",
            "-F",
            "--posix.odirect",
            "-C",
            "-t",
            "64k",
            "-b",
            "256k",
        ])
        .args(["-e", "-w", "-z", "-k", "-o", "/flash/testfile"])
        .arg("-O")
        .arg(format!("summaryFile={}", out_file.display()))
        .args(["-O", "summaryFormat=CSV"])
        .args(["--preset", "spider-mini", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let csv = std::fs::read_to_string(&out_file).unwrap();
    assert_eq!(
        csv.lines().next(),
        Some(
            "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter"
        ),
        "{csv}"
    );
    let last = csv.lines().last().unwrap();
    let columns = [
        "access", "bw", "IOPS", "Latency", "block", "xfer", "open", "wrrd", "close", "total",
        "numTasks", "iter",
    ];
    let fields: Vec<&str> = last.split(',').collect();
    assert_eq!(fields.len(), columns.len(), "{last}");
    assert_eq!(fields[0], "write", "-w: {csv}");
    let number = |i: usize| -> f64 { fields[i].parse().unwrap_or_else(|_| panic!("{last}")) };
    assert!(number(1) > 0.0 && number(2) > 0.0, "{last}");
    assert_eq!(number(4), 256.0, "block(KiB): {last}");
    assert_eq!(number(5), 64.0, "xfer(KiB): {last}");
    assert!(number(9) >= number(7), "total covers the transfers: {last}");
    assert_eq!(
        fields[10], "8",
        "a task per spider-mini client node: {last}"
    );
    assert_eq!(fields[11], "0");
    // Standard output: IOR's log lines and iopath's facts, never the CSV.
    assert!(
        stdout.contains("Commencing write performance test: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("Using reorderTasks '-C' (useful to avoid read cache in client)\n"),
        "IOR's line for -C with -v: {stdout}"
    );
    assert!(
        stdout.contains("Verifying contents of the file(s) just written."),
        "{stdout}"
    );
    assert!(stdout.contains("modeled: "), "{stdout}");
    assert!(!stdout.contains("access,"), "{stdout}");
    // The progress lines are on standard error, the baselines' too.
    assert!(stderr.contains("ior: test 0 write iteration 0"), "{stderr}");
    assert!(stderr.contains("baseline: raw disk wrote "), "{stderr}");
}

/// `iopath bench ior ARGS --dir DIR` with standard output to `stdout`.
fn bench_ior_to(
    args: &[&str],
    dir: &std::path::Path,
    stdout: std::process::Stdio,
) -> std::process::Output {
    iopath()
        .args(["bench", "ior"])
        .args(args)
        .arg("--dir")
        .arg(dir)
        .stdout(stdout)
        .output()
        .unwrap()
}

#[test]
fn results_that_cannot_be_written_fail_the_run_with_the_reason() {
    let dir = scratch();
    // A summary file on a full disk.
    let full_summary = bench_ior_to(
        &["-w", "-b", "1m", "-O", "summaryFile=/dev/full"],
        dir.path(),
        std::process::Stdio::null(),
    );
    let stderr = String::from_utf8_lossy(&full_summary.stderr);
    assert_eq!(full_summary.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("write the results") && stderr.contains("No space left on device"),
        "{stderr}"
    );
    // Standard output on a full disk (a full quota does this).
    let full_stdout = bench_ior_to(
        &["-w", "-b", "1m"],
        dir.path(),
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
            .into(),
    );
    let stderr = String::from_utf8_lossy(&full_stdout.stderr);
    assert_eq!(full_stdout.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
}

#[test]
fn a_reader_that_goes_away_ends_bench_ior_quietly_with_141() {
    let dir = scratch();
    // `iopath bench ior -w -b 256k -t 256k -i 400 -vv | head -1`
    let mut bench = iopath()
        .args([
            "bench", "ior", "-w", "-b", "256k", "-t", "256k", "-i", "400", "-vv",
        ])
        .arg("--dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(bench.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.starts_with("IOR-"), "{first}");
    // The reader is gone (the BufReader, and the pipe's read end with it).
    let output = bench.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("error"), "quietly: {stderr}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "its directory removed as at any end"
    );
}

#[test]
fn collective_io_is_refused_with_its_reason() {
    let dir = scratch();
    let output = iopath()
        .args(["bench", "ior", "-c", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("-c: collective I/O is MPI-IO's"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing ran"
    );
}

#[test]
fn bench_iorcd_runs_both_parts_on_the_modeled_machine_and_draws_them() {
    let dir = scratch();
    let output = iopath()
        .args(["bench", "iorcd", "--loads", "1,2,4", "--interval-ms", "100"])
        .args(["--windows", "3", "--repeats", "1", "--degraded-tasks", "2"])
        .args(["-t", "1m", "--json", "--svg"])
        .arg(dir.path())
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("load  3/3"), "a line per load: {stderr}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["stack"], "spider-mini-routed");
    assert_eq!(json["loads"].as_array().unwrap().len(), 3);
    for run in json["loads"].as_array().unwrap() {
        for phase in run["phases"].as_array().unwrap() {
            assert!(phase["bandwidth_mib_s"].as_f64().unwrap() > 0.0, "{phase}");
            assert!(phase["intervals"].as_u64().unwrap() > 0, "{phase}");
        }
    }
    assert_eq!(json["correlations"].as_array().unwrap().len(), 2);
    let runs = json["rule_runs"].as_array().unwrap();
    let conditions: Vec<&str> = runs
        .iter()
        .map(|r| r["condition"].as_str().unwrap())
        .collect();
    assert_eq!(
        conditions,
        ["healthy", "impeded_storage", "starved_routers"]
    );
    // The impeded disks together give an eighth of the healthy write rate of the load nearest
    // --degraded-tasks (2), in host time.
    let disk = &json["impeded_disk"];
    let together = disk["bandwidth_bytes_s"].as_f64().unwrap() * disk["targets"].as_f64().unwrap()
        / 32.0
        / (1u64 << 20) as f64;
    let healthy = json["loads"][1]["phases"][0]["bandwidth_mib_s"]
        .as_f64()
        .unwrap();
    assert!(
        (together / (healthy * 0.125) - 1.0).abs() < 0.01,
        "{together} MiB/s against {healthy} MiB/s healthy"
    );
    assert_eq!(json["conditions"].as_array().unwrap().len(), 3);
    let modeled = json["modeled"].as_str().unwrap();
    assert!(modeled.contains("time scale 32"), "{modeled}");
    for name in ["iorcd-write.svg", "iorcd-read.svg"] {
        let drawing = Drawing::read_clean(&std::fs::read_to_string(dir.path().join(name)).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(drawing.series.len(), 2, "{name}: bandwidth and congestion");
        assert!(drawing.series.iter().all(|s| s.points.len() == 3));
        // Congestion reads against its own axis, not scaled onto MiB/s.
        assert!(
            drawing
                .texts_of("axis-label")
                .contains(&"router congestion (s queued per s)"),
            "{name}"
        );
    }
    let rule =
        Drawing::read_clean(&std::fs::read_to_string(dir.path().join("iorcd-rule.svg")).unwrap())
            .unwrap();
    assert_eq!(rule.series.len(), 3, "a line per condition");
    assert!(
        runs.iter().all(|r| r["write_timeline"]
            .as_array()
            .is_some_and(|t| !t.is_empty())),
        "every run has its timeline"
    );
}

#[test]
fn bench_monitoring_runs_plain_and_monitored_rounds_and_the_monitors_ran() {
    let dir = scratch();
    let output = iopath()
        .args(["bench", "monitoring", "--rounds", "2", "--seconds", "1"])
        .args([
            "--tasks",
            "2",
            "-t",
            "1m",
            "--interval-ms",
            "200",
            "--scrape-ms",
            "200",
        ])
        .arg("--json")
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs = json["runs"].as_array().unwrap();
    let order: Vec<bool> = runs
        .iter()
        .map(|r| r["monitored"].as_bool().unwrap())
        .collect();
    assert_eq!(order, [false, true, true, false], "ABBA");
    for run in runs {
        assert!(run["write_mib_s"].as_f64().unwrap() > 0.0, "{run}");
        let monitored = run["monitored"].as_bool().unwrap();
        // Monitored runs sampled and scraped; plain ones did neither.
        assert_eq!(run["records"].as_u64().unwrap() > 0, monitored, "{run}");
        assert_eq!(run["scrapes"].as_u64().unwrap() > 0, monitored, "{run}");
    }
    // Every server node process was scraped.
    assert_eq!(json["scraped"].as_array().unwrap().len(), 7);
    for o in json["overhead"].as_array().unwrap() {
        assert_eq!(o["round_ratios"].as_array().unwrap().len(), 2, "{o}");
        assert!(o["verdict"].is_string(), "{o}");
    }
}

#[test]
fn bench_iorcd_refuses_a_stack_without_routers() {
    let output = iopath()
        .args(["bench", "iorcd", "--preset", "spider-mini"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no routers"), "{stderr}");
}

/// A paper's experiment's `--quick` sweep as the suite runs it: its progress (standard error),
/// its report as JSON and its plot, read back (and checked as a drawing).
fn quick_sweep(bench: &str, more: &[&str]) -> (String, serde_json::Value, Drawing) {
    let dir = scratch();
    let svg = dir.path().join(format!("{bench}.svg"));
    let output = iopath()
        .args(["bench", bench, "--quick", "--json"])
        .args(more)
        .arg("--svg")
        .arg(&svg)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    let json = serde_json::from_slice(&output.stdout).unwrap();
    let drawing = Drawing::read_clean(&std::fs::read_to_string(&svg).unwrap())
        .unwrap_or_else(|e| panic!("{e}"));
    (stderr, json, drawing)
}

#[test]
fn bench_placement_quick_places_writers_beside_their_servers_and_finishes_sooner() {
    let (stderr, json, drawing) = quick_sweep("placement", &[]);
    assert!(
        stderr.contains("writers placed ...") && stderr.contains("writers in launcher order ..."),
        "a line per run: {stderr}"
    );
    assert_eq!(json["torus"], "4x4x2");
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "a row per server count");
    for row in rows {
        let (default, placed) = (&row["default"], &row["placed"]);
        let f = |run: &serde_json::Value, key: &str| run[key].as_f64().unwrap();
        // Launcher order piles more pairs on a link than it carries (2 OSTs' worth); the
        // nearest free nodes do not.
        assert!(f(default, "max_pairs_per_link") > 2.0, "{row}");
        assert!(f(placed, "max_pairs_per_link") <= 2.0, "{row}");
        // So the placed writers finish sooner and closer together, measured and modeled.
        assert!(f(row, "gain") > 0.1, "{row}");
        assert!(f(row, "model_gain") > 0.1, "{row}");
        assert!(f(placed, "spread_s") < f(default, "spread_s"), "{row}");
        // Every writer's time measured, and the measured run near the flow model's (the
        // quick run's few transfers each leave more of the start-up in it than the default).
        for run in [default, placed] {
            assert_eq!(
                run["completion_s"].as_array().unwrap().len(),
                run["writers"].as_u64().unwrap() as usize
            );
            let ratio = f(run, "ratio_to_model");
            assert!((0.7..1.1).contains(&ratio), "{ratio}: {row}");
        }
    }
    let modeled = json["modeled"].as_str().unwrap();
    assert!(modeled.contains("time scale 64"), "{modeled}");
    assert_eq!(
        drawing.series.len(),
        4,
        "measured and modeled, default and placed"
    );
}

#[test]
fn bench_routing_quick_spreads_round_robin_over_a_leaf_and_projection_gains_from_placement() {
    // With its routers and servers as processes of their own, the torus modeled once here
    // (the routing lab's test runs it embedded).
    let (stderr, json, drawing) = quick_sweep("routing", &["--processes"]);
    assert_eq!(json["mode"], "processes", "{json}");
    assert!(
        stderr.contains("projection, 16 writers placed ..."),
        "a line per run: {stderr}"
    );
    let rows = json["rows"].as_array().unwrap();
    let row = |scheme: &str| {
        rows.iter()
            .find(|r| r["scheme"] == scheme)
            .unwrap_or_else(|| panic!("no {scheme} row: {json}"))
    };
    let (rr, projection) = (row("round-robin"), row("projection"));
    let f = |run: &serde_json::Value, key: &str| run[key].as_f64().unwrap();
    // Round-robin spreads every writer over its leaf's four routers; projection sends each
    // through the one router of its server.
    assert_eq!(rr["default"]["routers_per_writer"], 4, "{json}");
    assert_eq!(projection["default"]["routers_per_writer"], 1, "{json}");
    // Placed next to their server's router, projection's writers cross fewer hops, and
    // finish sooner, measured and modeled; round-robin's still reach for the far routers.
    let (pd, pp) = (&projection["default"], &projection["placed"]);
    assert!(f(pp, "mean_hops") < f(pd, "mean_hops") / 2.0, "{json}");
    assert!(
        f(&rr["placed"], "mean_hops") > 1.5 * f(pp, "mean_hops"),
        "{json}"
    );
    assert!(
        f(pp, "aggregate_mb_s") > 1.1 * f(pd, "aggregate_mb_s"),
        "{json}"
    );
    assert!(
        f(pp, "model_aggregate_mb_s") > 1.1 * f(pd, "model_aggregate_mb_s"),
        "{json}"
    );
    // The routers forwarded what the routes give them: projection's exactly its writers'
    // bytes (and the small messages with them); round-robin's unevenly, for a writer's small
    // requests and its bulk take turns among the same routers.
    for run in [pd, pp] {
        let over = f(run, "router_over_even");
        assert!((1.0..1.05).contains(&over), "{over}: {json}");
    }
    assert!(f(&rr["default"], "router_over_even") > 1.1, "{json}");
    for run in [pd, pp, &rr["default"], &rr["placed"]] {
        let ratio = f(run, "ratio_to_model");
        assert!((0.5..1.1).contains(&ratio), "{ratio}: {json}");
        let moved: u64 = run["router_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[1].as_u64().unwrap())
            .sum();
        assert!(
            moved >= 16 * (6 << 20),
            "every writer's bytes forwarded: {json}"
        );
    }
    assert_eq!(
        json["rows"][0]["paper_gb_s"][1], 83.0,
        "the paper's figures beside"
    );
    assert!(json["modeled"].as_str().unwrap().contains("rtr0"), "{json}");
    assert_eq!(
        drawing.series.len(),
        4,
        "measured and modeled, default and placed"
    );
}

#[test]
fn bench_fyods_quick_shows_one_fyod_falling_where_its_threads_page_and_four_scaling() {
    let (stderr, json, drawing) = quick_sweep("fyods", &[]);
    assert!(stderr.contains("[4/4]"), "a line per point: {stderr}");
    let point = |fyods: u64, nodes: u64| {
        json["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["fyods"] == fyods && p["nodes"] == nodes && p["api"] == "async")
            .unwrap_or_else(|| panic!("no point {fyods} x {nodes}: {json}"))
            .clone()
    };
    let f = |p: &serde_json::Value, key: &str| p[key].as_f64().unwrap();
    let (one_few, one_many) = (point(1, 16), point(1, 128));
    let (four_few, four_many) = (point(4, 16), point(4, 128));
    // One fyod falls once its threads outgrow its service node (51 fit), and only then pages.
    assert!(
        f(&one_many, "write_mb_s") < 0.7 * f(&one_few, "write_mb_s"),
        "{json}"
    );
    assert_eq!(f(&one_few, "paged_calls"), 0.0, "{json}");
    assert!(
        f(&one_many, "paged_calls") > 0.5 * f(&one_many, "fyod_calls"),
        "{json}"
    );
    // Four fyods keep scaling with the nodes, and serve many nodes far better than one.
    assert!(
        f(&four_many, "write_mb_s") > f(&four_few, "write_mb_s"),
        "{json}"
    );
    assert!(
        f(&four_many, "write_mb_s") > 3.0 * f(&one_many, "write_mb_s"),
        "{json}"
    );
    // Reads too, and the paper's figures beside.
    assert!(
        f(&four_many, "read_mb_s") > 3.0 * f(&one_many, "read_mb_s"),
        "{json}"
    );
    assert_eq!(f(&one_many, "paper_write_mb_s"), 138.0);
    // The flow model's prediction for the same machine beside each point: the falling fyod
    // and the saturated disks near it (a release build reads 0.90 to 0.96 here; a debug build
    // beside other tests keeps less pace).
    for p in [&one_many, &four_many] {
        let ratio = f(p, "write_mb_s") / f(p, "model_write_mb_s");
        assert!((0.7..1.1).contains(&ratio), "{ratio}: {json}");
    }
    assert_eq!(f(&four_many, "paper_read_mb_s"), 565.0);
    let modeled = json["modeled"].as_str().unwrap();
    assert!(modeled.contains("paging past 51 open files"), "{modeled}");
    assert_eq!(
        drawing.series.len(),
        4,
        "two measured lines, two of the paper's"
    );
}

/// A fyod on a modeled service node: one CPU, 20 ms a call, memory for two threads.
const SERVICE_NODE_STACK: &str = r#"
name = "svc"
description = "a fyod on a modeled service node"
[model]
time_scale = 2
[layout]
stripe_size = "1m"
stripe_count = -1
[[networks]]
name = "mesh0"
bandwidth = "400m"
[[nodes]]
name = "mds"
role = "mds"
nids = { mesh0 = 1 }
[[nodes]]
name = "io"
role = "oss"
count = 2
nids = { mesh0 = 200 }
disk_bandwidth = "50m"
[[nodes]]
name = "fyod"
role = "fyod"
nids = { mesh0 = 100 }
fyod_call_us = 20000
fyod_cpus = 1
fyod_memory = "10m"
fyod_thread_memory = "5m"
[[nodes]]
name = "c"
role = "client"
count = 4
nids = { mesh0 = 1000 }
"#;

#[test]
fn a_fyods_modeled_service_node_bounds_ior_alike_embedded_and_as_processes() {
    let dir = scratch();
    let stack = dir.path().join("svc.toml");
    std::fs::write(&stack, SERVICE_NODE_STACK).unwrap();
    let max_write = |mode: &[&str]| -> f64 {
        let output = iopath()
            .args(["bench", "ior", "--stack"])
            .arg(&stack)
            .args(mode)
            .args(["-w", "-F", "-t", "1m", "-b", "4m"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            out.contains("the service nodes of fyod (20000 us a call on 1 CPU"),
            "{out}"
        );
        out.lines()
            .find_map(|l| l.strip_prefix("Max Write: "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no Max Write: {out}"))
    };
    let embedded = max_write(&[]);
    let processes = max_write(&["--processes"]);
    // Four open files where two threads fit: every call pages, 40 modeled ms on the one CPU,
    // 80 host ms at time scale 2 — at most 12.5 calls of 1 MiB a second, in either mode.
    for rate in [embedded, processes] {
        assert!(rate <= 12.5 * 1.05 && rate > 12.5 * 0.5, "{rate} MiB/s");
    }
    // Within a fifth: the processes share this host's cores with each other and with the
    // rest of the suite, and at time scale 2 a busy host shows (10.71 against 9.21 once on a
    // loaded CI machine).
    assert!(
        (embedded / processes - 1.0).abs() < 0.2,
        "{embedded} embedded, {processes} as processes"
    );
}

#[test]
fn a_storage_server_killed_under_bench_ior_is_named_as_gone_in_its_error() {
    use std::io::{BufRead, Read};
    let dir = scratch();
    let mut bench = iopath()
        .args([
            "bench",
            "ior",
            "--preset",
            "spider-mini",
            "--processes",
            "-w",
            "-r",
            "-F",
            "-t",
            "1m",
            "-b",
            "16m",
            "-i",
            "200",
        ])
        .arg("--dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = bench.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // oss1 is killed once IOR's first write row is out: mid-run, with more to write.
    let mut lines = std::io::BufReader::new(bench.stdout.take().unwrap()).lines();
    let mut out = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        out.push_str(&line);
        out.push('\n');
        if line.starts_with("write ") {
            break;
        }
    }
    let storage = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("iopath-bench-ior-")
        })
        .map(|e| e.path())
        .unwrap_or_else(|| panic!("no storage directory; IOR said:\n{out}"));
    let pid = common::node_pid(&storage, "oss1")
        .unwrap_or_else(|| panic!("oss1 is not running; IOR said:\n{out}"));
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    for line in lines {
        let Ok(line) = line else { break };
        out.push_str(&line);
        out.push('\n');
    }
    let status = bench.wait().unwrap();
    let stderr = said.join().unwrap();
    assert!(
        !status.success(),
        "IOR went on without oss1:\n{out}{stderr}"
    );
    // The error names what happened first, then what the clients saw of it.
    let error = stderr
        .lines()
        .find(|l| l.starts_with("iopath: error:"))
        .unwrap_or_else(|| panic!("no error line:\n{stderr}"));
    assert!(
        error.contains("iopath: error: oss1 is gone (its admin service at 127.0.0.1:")
            && error.contains("; the clients saw: "),
        "{error}"
    );
}
