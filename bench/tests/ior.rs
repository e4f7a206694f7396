//! `iopath bench ior` on an embedded stack: IOR's output layout line by line, its JSON, the
//! read-back check, and the baselines and ratios beside them.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use iopath_bench::ior::phase::Progress;
use iopath_bench::ior::{IorOptions, IorOutcome};
use iopath_stack::schema::file::NetworkEntry;
use iopath_stack::{StackChoice, StackFile};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// IOR's defaults on preset `name`, with `-t` and `-b` as given.
fn on(name: &str, transfer_size_bytes: u64, block_size_bytes: u64) -> IorOptions {
    IorOptions {
        choice: StackChoice {
            preset: Some(name.into()),
            ..StackChoice::default()
        },
        transfer_size_bytes,
        block_size_bytes,
        ..IorOptions::default()
    }
}

async fn ior(options: IorOptions) -> (IorOutcome, String) {
    let dir = tempfile::tempdir().unwrap();
    let options = IorOptions {
        dir: Some(dir.path().to_path_buf()),
        ..options
    };
    let mut out = Vec::new();
    let outcome =
        iopath_bench::ior::measure(&options, "ior TEST", &mut out, Progress::Silent, None)
            .await
            .unwrap();
    // Nothing is left in the directory: the stack's storage and the baseline's files go.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    (outcome, String::from_utf8(out).unwrap())
}

fn line_after<'a>(text: &'a str, first: &str) -> &'a str {
    let mut lines = text.lines();
    lines
        .find(|l| *l == first)
        .unwrap_or_else(|| panic!("no line {first:?} in\n{text}"));
    lines.next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_output_has_iors_layout() {
    let (outcome, text) = ior(IorOptions {
        tasks: Some(4),
        segments: 2,
        repetitions: 2,
        fsync: true,
        store_file_offset: true,
        ..on("spider-mini", 64 * KIB, 256 * KIB)
    })
    .await;
    assert!(
        text.starts_with("IOR-3.3.0: MPI Coordinated Test of Parallel I/O\n"),
        "IOR's banner, word for word: {text}"
    );
    let outcome = &outcome.tests[0];
    for key in [
        "Began",
        "Command line",
        "Machine",
        "TestID",
        "StartTime",
        "Path",
        "FS",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{key:<20}: "))),
            "{key}\n{text}"
        );
    }
    assert!(text.contains("\nOptions: \n"), "{text}");
    // IOR's FS line: the targets' file systems summed, as the clients see them.
    let fs = text.lines().find(|l| l.starts_with("FS ")).unwrap();
    assert!(
        fs.contains(" GiB   Used FS: ") || fs.contains(" TiB   Used FS: "),
        "{fs}"
    );
    assert!(fs.contains("%   Inodes: ") && fs.ends_with('%'), "{fs}");
    assert!(
        text.contains("api                 : iopath-async\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "apiVersion          : iopath client library straight to the storage servers\n"
        ),
        "what the tasks talk to: {text}"
    );
    assert!(
        text.contains("access              : single-shared-file\n"),
        "{text}"
    );
    assert!(text.contains("tasks               : 4\n"), "{text}");
    assert!(
        text.contains("xfersize            : 65536 bytes\n"),
        "{text}"
    );
    assert!(text.contains("aggregate filesize  : 2 MiB\n"), "{text}");
    assert_eq!(
        line_after(&text, "Results: "),
        "",
        "a blank line after Results"
    );
    assert!(text.contains(
        "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n\
         ------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n"
    ));
    // Per iteration: write, read, remove; every number in its column.
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("------    "))
        .skip(1)
        .take_while(|l| !l.starts_with("Max "))
        .collect();
    assert_eq!(rows.len(), 6, "{text}");
    for (i, row) in rows.iter().enumerate() {
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields.len(), 11, "{row}");
        assert_eq!(fields[10], (i / 3).to_string(), "the iteration: {row}");
        if fields[0] != "remove" {
            for f in &fields[1..] {
                f.parse::<f64>().unwrap_or_else(|_| panic!("{f} in {row}"));
            }
            assert_eq!(fields[4], "256.00", "block KiB: {row}");
            assert_eq!(fields[5], "64.00", "xfer KiB: {row}");
            // IOR's column starts: access 10 wide, then 11 per number (latency 12).
            assert_eq!(
                &row[10..11],
                fields[1].chars().next().unwrap().to_string(),
                "{row}"
            );
        } else {
            assert!(
                row.starts_with("remove    -          -          -           -"),
                "{row}"
            );
        }
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("Max Write: ") && l.ends_with(" MB/sec)"))
    );
    assert!(text.lines().any(|l| l.starts_with("Max Read:  ")));
    let header = line_after(&text, "Summary of all tests:");
    assert_eq!(
        header,
        "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum"
    );
    let summary: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(summary[0][0], "write");
    assert_eq!(summary[1][0], "read");
    for row in &summary {
        assert_eq!(row.len(), 27, "{row:?}");
        assert_eq!(row[13], "4", "#Tasks");
        assert_eq!(row[15], "2", "reps");
        assert_eq!(row[16], "0", "fPP");
        assert_eq!(row[21], "2", "segcnt");
        assert_eq!(row[22], "262144", "blksiz");
        assert_eq!(row[23], "65536", "xsize");
        assert_eq!(row[24], "2.0", "aggs(MiB)");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("Finished            : "))
    );
    // iopath's own lines: what was checked, the baselines and the ratios.
    assert!(
        text.contains("verified: 4 MiB read back and checked word by word"),
        "{text}"
    );
    assert!(text.contains("  disk write "), "{text}");
    assert!(text.contains("  write / disk write "), "{text}");
    assert!(
        text.contains("modeled: nothing: real bytes"),
        "modeled is labeled: {text}"
    );
    assert_eq!(outcome.results.len(), 4);
    assert_eq!(outcome.facts.verified_bytes, 2 * (2 << 20));
    assert!(outcome.facts.ratios.write_vs_disk.is_some_and(|r| r > 0.0));
    assert!(
        outcome.facts.baselines.tcp_mib_s.is_none(),
        "no TCP baseline embedded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_has_iors_keys() {
    let (outcome, text) = ior(IorOptions {
        tasks: Some(2),
        file_per_proc: true,
        reorder_tasks: true,
        api: "sync".into(),
        ior_options: vec!["summaryFormat=JSON".into()],
        ..on("spider-mini", 128 * KIB, 512 * KIB)
    })
    .await;
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    for key in [
        "Version",
        "Began",
        "Command line",
        "Machine",
        "tests",
        "summary",
        "Finished",
        "iopath",
    ] {
        assert!(json.get(key).is_some(), "{key}: {json}");
    }
    let test = &json["tests"][0];
    assert_eq!(test["Path"], "/ior/testFile.00000000");
    assert_eq!(test["Parameters"]["filePerProc"], 1);
    assert_eq!(test["Parameters"]["reorderTasks"], 1);
    assert_eq!(test["Parameters"]["storeFileOffset"], 0);
    assert_eq!(test["Options"]["access"], "file-per-process");
    let results = test["Results"][0].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["access"], "write");
    assert_eq!(results[1]["access"], "read");
    for key in [
        "bwMiB",
        "blockKiB",
        "xferKiB",
        "iops",
        "latency",
        "openTime",
        "wrRdTime",
        "closeTime",
        "totalTime",
    ] {
        assert!(results[0][key].is_number(), "{key}");
    }
    let summary = json["summary"].as_array().unwrap();
    assert_eq!(summary[0]["operation"], "write");
    assert_eq!(summary[0]["API"], "POSIX", "-a sync is IOR's POSIX api");
    assert_eq!(test["Options"]["api"], "POSIX");
    assert_eq!(summary[0]["numTasks"], 2);
    assert_eq!(summary[0]["transferSize"], 131072);
    assert_eq!(summary[0]["xsizeMiB"], 1.0);
    for key in [
        "bwMaxMIB",
        "bwMinMIB",
        "bwMeanMIB",
        "bwStdMIB",
        "OPsMax",
        "OPsMean",
        "MeanTime",
    ] {
        assert!(summary[0][key].is_number(), "{key}");
    }
    assert!(test["max"]["writeMiB"].is_number());
    assert_eq!(test["iopath"]["verified_bytes"], 1 << 20);
    assert!(
        test["iopath"]["baselines"]["disk_write_mib_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(test["iopath"]["ratios"]["write_vs_disk"].is_number());
    assert_eq!(
        json["iopath"]["modeled"]
            .as_str()
            .map(|m| m.starts_with("nothing")),
        Some(true)
    );
    assert_eq!(outcome.tests[0].info.tasks_per_node, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_fyods_and_routers_too() {
    // asci-red-mini: clients -> fyods (PFS) -> storage servers.
    let (outcome, _) = ior(IorOptions {
        write: true,
        ..on("asci-red-mini", 256 * KIB, MIB)
    })
    .await;
    assert_eq!(outcome.tests[0].results.len(), 1, "write only");
    assert_eq!(
        outcome.tests[0].facts.verified_bytes,
        8 << 20,
        "write-only runs are checked too"
    );
    assert!(
        outcome.run.api_version.contains("fyod"),
        "{}",
        outcome.run.api_version
    );
    // spider-mini-routed, fine-grained routes: clients -> routers -> storage servers.
    let routed = on("spider-mini-routed", 256 * KIB, MIB);
    let (outcome, _) = ior(IorOptions {
        choice: StackChoice {
            route_set: Some("fine-grained".into()),
            ..routed.choice.clone()
        },
        ..routed
    })
    .await;
    assert_eq!(outcome.tests[0].facts.verified_bytes, 8 << 20);
    assert!(outcome.run.api_version.contains("routers"));
}

#[tokio::test]
async fn bad_options_are_refused_before_anything_runs() {
    let options = IorOptions {
        transfer_size_bytes: MIB,
        block_size_bytes: 1536 * KIB,
        ..IorOptions::default()
    };
    let error =
        iopath_bench::ior::measure(&options, "ior", &mut Vec::new(), Progress::Silent, None)
            .await
            .unwrap_err();
    assert!(error.to_string().starts_with("-b: "), "{error}");
    let options = IorOptions {
        choice: StackChoice {
            preset: Some("nope".into()),
            ..StackChoice::default()
        },
        ..IorOptions::default()
    };
    let error =
        iopath_bench::ior::measure(&options, "ior", &mut Vec::new(), Progress::Silent, None)
            .await
            .unwrap_err();
    assert!(
        error.to_string().contains("no preset named \"nope\""),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_order_fsync_per_write_barriers_and_a_file_per_repetition() {
    let (outcome, text) = ior(IorOptions {
        tasks: Some(4),
        segments: 2,
        repetitions: 2,
        file_per_proc: true,
        unique_dir: true,
        multi_file: true,
        random_offset: true,
        fsync_per_write: true,
        intra_test_barriers: true,
        store_file_offset: true,
        verbose: 2,
        ..on("spider-mini", 64 * KIB, 256 * KIB)
    })
    .await;
    assert!(text.contains("ordering in a file  : random\n"), "{text}");
    assert!(
        text.contains("Path                : /ior/0/testFile.00000000.0\n"),
        "{text}"
    );
    // -v and -vv lines fall among the results, as IOR's log lines do.
    assert_eq!(
        text.matches("Commencing write performance test: ").count(),
        2,
        "{text}"
    );
    assert!(text.contains("Random offsets: seed "), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("task ")).count(),
        4 * 2 * 2,
        "a line per task per phase with -vv: {text}"
    );
    let test = &outcome.tests[0];
    assert_eq!(test.results.len(), 4);
    // Every word of both repetitions' files checked, though written in a random order.
    assert_eq!(test.facts.verified_bytes, 2 * 4 * 2 * 256 * KIB);
    assert_eq!(test.facts.unchecked_bytes, 0);
    for r in &test.results {
        assert_eq!(r.transfers, 4 * 2 * 4, "{r:?}");
        assert!(r.stonewall.is_none() && !r.stonewalled);
    }
}

/// A script of three tests on one stack: the first writes and keeps its files, the second
/// reads them back (a read-only test, checked against what the first wrote), the third
/// writes over them (-E) and removes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_reads_back_what_an_earlier_test_kept() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("tests.ior");
    std::fs::write(
        &script,
        "\
# IOR's own script form
IOR START
    api=POSIX
    transferSize=64k, blockSize=256k
    writeFile=1, readFile=0
    keepFile=1
RUN
    writeFile=0
    readFile=1
    reorderTasks=1
    keepFile=1
RUN
    readFile=0
    writeFile=1
    useExistingTestFile=1
    keepFile=0
RUN
IOR STOP
",
    )
    .unwrap();
    let (outcome, text) = ior(IorOptions {
        tasks: Some(4),
        segments: 2,
        script: Some(script),
        ..on("spider-mini", 64 * KIB, 256 * KIB)
    })
    .await;
    assert_eq!(outcome.tests.len(), 3, "{text}");
    let bytes = 4 * 2 * 256 * KIB;
    let [first, second, third] = &outcome.tests[..] else {
        panic!("three tests")
    };
    assert_eq!(first.results.len(), 1, "write only");
    assert_eq!(first.facts.verified_bytes, bytes, "read back untimed");
    assert_eq!(second.results.len(), 1, "read only");
    assert_eq!(
        second.facts.verified_bytes, bytes,
        "the second test checks every word the first wrote"
    );
    assert!(third.info.params.use_existing_file);
    assert_eq!(third.facts.verified_bytes, bytes);
    // One shape, one measurement of the disk: before and after the first test, shared.
    let disk = &first.facts.baselines.disk_write_each_mib_s;
    assert_eq!(disk.len(), 2, "before and after: {disk:?}");
    assert_eq!(second.facts.baselines, first.facts.baselines);
    assert_eq!(third.facts.baselines, first.facts.baselines);
    for id in 0..3 {
        assert!(
            text.contains(&format!("TestID              : {id}\n")),
            "{text}"
        );
    }
    // The summary has a row per test, each under its own Test#.
    let header = line_after(&text, "Summary of all tests:");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| l.starts_with("write") || l.starts_with("read"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let tests: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[12])).collect();
    assert_eq!(tests, vec![("write", "0"), ("read", "1"), ("write", "2")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_run_says_why_its_file_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let options = IorOptions {
        read: true,
        dir: Some(dir.path().to_path_buf()),
        ..on("spider-mini", 64 * KIB, 256 * KIB)
    };
    let error =
        iopath_bench::ior::measure(&options, "ior -r", &mut Vec::new(), Progress::Silent, None)
            .await
            .unwrap_err()
            .to_string();
    assert!(error.contains("does not exist"), "{error}");
    assert!(error.contains("-f script"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_results_go_to_the_summary_file_and_the_log_stays_out() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("results.csv");
    let (outcome, out) = ior(IorOptions {
        tasks: Some(2),
        verbose: 1,
        ior_options: vec![
            format!("summaryFile={}", csv.display()),
            "summaryFormat=CSV".into(),
        ],
        ..on("spider-mini", 64 * KIB, 256 * KIB)
    })
    .await;
    let written = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(
        lines,
        [
            "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter",
            lines[1],
            lines[2]
        ],
        "a header and a line per phase, nothing else:\n{written}"
    );
    for (line, access) in lines[1..].iter().zip(["write", "read"]) {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 12, "{line}");
        assert_eq!(fields[0], access);
        for f in &fields[1..10] {
            let (_, decimals) = f.split_once('.').unwrap_or_else(|| panic!("{f} in {line}"));
            assert_eq!(decimals.len(), 4, "IOR's %.4f: {line}");
        }
        assert_eq!(fields[10], "2", "numTasks");
        assert_eq!(fields[11], "0", "iter");
    }
    let bw: f64 = lines[1].split(',').nth(1).unwrap().parse().unwrap();
    let expected = outcome.tests[0].results[0].bw_mib_s();
    assert!((bw - expected).abs() < 1e-3, "{bw} vs {expected}");
    // Standard output has the log lines and iopath's facts, not the results.
    assert!(out.contains("Commencing write performance test: "), "{out}");
    assert!(out.contains("modeled: "), "{out}");
    assert!(!out.contains("bw(MiB/s)"), "{out}");
}

/// A write a deadline stopped is still read back and checked in full by IOR's untimed check,
/// which no deadline stops. With an fsync after every 4 KiB write the tasks rarely finish in
/// the second they have; either way every byte written must be checked. Without
/// stoneWallingWearOut IOR reckons no stonewalling figures, and prints none: `NA` in the
/// summary's Stonewall columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stonewalled_write_is_checked_in_full() {
    // On 64 MB/s modeled links, 2 x 128 MiB takes 4 s: the 1 s deadline always stops it.
    let dir = tempfile::tempdir().unwrap();
    let (t, block) = (64 * KIB, 128 * MIB);
    let (outcome, text) = ior(IorOptions {
        choice: modeled_spider_mini(dir.path()),
        tasks: Some(2),
        write: true,
        fsync_per_write: true,
        deadline_s: 1,
        ..on("spider-mini", t, block)
    })
    .await;
    let test = &outcome.tests[0];
    let write = test.results[0];
    assert_eq!(
        test.facts.verified_bytes, write.bytes,
        "every byte the write made is checked: {text}"
    );
    assert!(write.stonewalled, "the deadline stopped the write");
    assert!(write.bytes < 2 * block, "{write:?}");
    assert_eq!(write.stonewall, None, "no figures without wear-out");
    assert!(!text.contains("stonewalling pairs accessed"), "{text}");
    let row = line_after(&text, "Summary of all tests:");
    assert!(row.contains("Stonewall(s) Stonewall(MiB)"), "{row}");
    let write_row = text
        .lines()
        .find(|l| l.starts_with("write ") && l.contains(" NA "))
        .unwrap_or_else(|| panic!("a summary row with NA: {text}"));
    assert_eq!(
        write_row.split_whitespace().filter(|w| *w == "NA").count(),
        2
    );
}

/// With `-O stoneWallingWearOut=1` IOR's stonewalling figures, reckoned as IOR reckons them:
/// every task goes on to the most transfers any task made by the deadline, the line says the
/// data per task, and the summary's Stonewall(MiB) is the mean task's rate up to the stonewall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wear_out_brings_every_task_to_the_most_transfers_and_iors_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (t, block) = (64 * KIB, 128 * MIB);
    let (outcome, text) = ior(IorOptions {
        choice: modeled_spider_mini(dir.path()),
        tasks: Some(2),
        write: true,
        fsync_per_write: true,
        deadline_s: 1,
        verbose: 1,
        ior_options: vec!["stoneWallingWearOut=1".into()],
        ..on("spider-mini", t, block)
    })
    .await;
    let test = &outcome.tests[0];
    let write = test.results[0];
    let wall = write.stonewall.expect("figures with wear-out");
    assert!(write.stonewalled);
    // Wear-out: every task made the most any task made by the deadline.
    assert_eq!(write.transfers, 2 * wall.pairs_max, "{write:?} {wall:?}");
    assert!(
        wall.pairs_min <= wall.pairs_max && wall.pairs_min > 0,
        "{wall:?}"
    );
    // Per task, as IOR: the fewest one task moved, and the mean over tasks.
    assert_eq!(wall.min_data_bytes, wall.pairs_min * t);
    assert!(wall.mean_data_bytes >= wall.min_data_bytes, "{wall:?}");
    assert!(wall.mean_data_bytes <= wall.pairs_max * t, "{wall:?}");
    assert!(wall.seconds >= 1.0, "task 0 ran to the deadline: {wall:?}");
    assert!(text.contains(&wall.line()), "{text}");
    assert!(
        text.contains("0: stonewalling pairs accessed: ")
            && text.contains("1: stonewalling pairs accessed: "),
        "-v: a line per task: {text}"
    );
    assert!(
        text.contains(&format!(
            "Pairs deadlineForStonewallingaccessed: {}",
            wall.pairs_max
        )),
        "{text}"
    );
    // The summary: the time, and the mean task's MiB/s up to the stonewall.
    let row = text
        .lines()
        .skip_while(|l| !l.starts_with("Summary of all tests:"))
        .find(|l| l.starts_with("write "))
        .unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    let seconds: f64 = cells[10].parse().unwrap();
    let mib_s: f64 = cells[11].parse().unwrap();
    assert!((seconds - wall.seconds).abs() < 0.006, "{row} {wall:?}");
    let expected = wall.mean_data_bytes as f64 / wall.seconds / MIB as f64;
    assert!((mib_s - expected).abs() < 0.006, "{row}: {expected}");
    assert!(text.contains("stoneWallingWearOut : 1"), "{text}");
}

/// IORCD on spider-mini-routed's routers while IOR writes and reads: the records, analysed as
/// the paper does, put the written bytes in the write direction and the read bytes in the
/// read direction, every byte of both through the routers, and give each burst its congestion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iorcd_on_the_routers_sees_writes_and_reads_go_their_ways() {
    use iopath_bench::ior::phase::{self, Files, Job};
    use iopath_bench::iorcd::{self, Direction};
    use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
    use iopath_stack::schema::RoleName;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let stack = StackChoice {
        preset: Some("spider-mini-routed".into()),
        ..StackChoice::default()
    }
    .load()
    .unwrap();
    let storage = StorageDir::temporary("iorcd", Some(dir.path())).unwrap();
    let running = RunningStack::start(stack, Mode::Embedded, storage, None)
        .await
        .unwrap();
    let nodes = running.local_nodes();
    let routers: Vec<_> = nodes
        .iter()
        .filter(|n| n.role == RoleName::Router)
        .collect();
    assert!(!routers.is_empty());
    for router in &routers {
        router.tree.set("iorcd.interval_ms", "50").unwrap();
    }
    let storage_nets: Vec<String> = nodes
        .iter()
        .filter(|n| n.role == RoleName::Oss)
        .flat_map(|n| n.node.nids())
        .map(|nid| nid.net.to_string())
        .collect();
    let params = iopath_bench::ior::IorParams::from_options(
        &IorOptions {
            tasks: Some(4),
            file_per_proc: true,
            keep_file: true,
            ..on("spider-mini-routed", 256 * KIB, 4 * MIB)
        },
        0,
    )
    .unwrap();
    let mut clients = Vec::new();
    for node in running.clients().into_iter().take(4) {
        clients.push(running.connect(node).await.unwrap());
    }
    phase::make_parents(&clients[0], &params.test_file)
        .await
        .unwrap();
    let job = Arc::new(Job {
        buffers: iopath_bench::ior::buffers::pool(params.transfer_size_bytes as usize),
        params: params.clone(),
        tasks: 4,
        clients,
        seed: 0,
    });
    let (_, written) = phase::write(&job, 0, 1, None, Progress::Silent)
        .await
        .unwrap();
    let written = Arc::new(written);
    let files: Files = (0..4)
        .map(|task| (params.file_of(task, 0), Arc::clone(&written)))
        .collect();
    // A pause between the phases, so that they are bursts of their own.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let read = phase::read(&job, 0, &files, None, Progress::Silent)
        .await
        .unwrap();
    assert_eq!(read.verified_bytes, 16 * MIB);
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    phase::end(&job.clients).await.unwrap();
    let records: Vec<_> = routers
        .iter()
        .flat_map(|r| r.iorcd.as_ref().expect("routers sample").records())
        .collect();
    drop(nodes);
    running.stop().await.unwrap();

    let analysis = iorcd::analyze(&records, &storage_nets, 2, 0.5);
    let bytes = |direction: Direction| -> u64 {
        analysis
            .bursts
            .iter()
            .filter(|b| b.direction == direction)
            .flat_map(|b| &b.points)
            .map(|p| p.bytes)
            .sum()
    };
    // Every byte written went out onto the storage side; every byte read came back.
    assert!(bytes(Direction::Write) >= 16 * MIB, "{analysis:#?}");
    assert!(bytes(Direction::Read) >= 16 * MIB, "{analysis:#?}");
    for c in &analysis.correlations {
        assert!(c.intervals > 0, "{c:?}");
    }
    let text = iorcd::text(&analysis);
    assert!(text.contains("correlation of congestion"), "{text}");
    eprintln!("{text}");
    if let Ok(dump) = std::env::var("IOPATH_IORCD_DUMP") {
        let lines: String = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(dump, lines).unwrap();
    }
    let svg = iorcd::figure(&records, &analysis).svg();
    iopath_plot::check::Drawing::read_clean(&svg).unwrap_or_else(|e| panic!("{e}"));
}

/// spider-mini with its network modeled at 64 MB/s per interface, time scale 1, written
/// into `dir`.
fn modeled_spider_mini(dir: &std::path::Path) -> StackChoice {
    let preset = iopath_stack::preset("spider-mini").unwrap();
    let mut stack = StackFile::parse(preset.text, "spider-mini")
        .unwrap()
        .time_scale(1);
    stack.networks[0] = NetworkEntry::named("o2ib0")
        .bandwidth(64_000_000)
        .latency_us(10);
    let file = dir.join("modeled.toml");
    std::fs::write(&file, stack.to_toml()).unwrap();
    StackChoice {
        stack: Some(file),
        ..StackChoice::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modeled_stack_says_so_and_runs_at_its_links_rate() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, out) = ior(IorOptions {
        choice: modeled_spider_mini(dir.path()),
        tasks: Some(1),
        write: true,
        ..on("spider-mini", MIB, 8 * MIB)
    })
    .await;
    assert!(
        outcome
            .facts
            .modeled
            .starts_with("the links of mem0 (o2ib0): 64 MB/s, 10 us"),
        "{}",
        outcome.facts.modeled
    );
    // Named as its NIDs name it, the stack file's name beside.
    assert!(out.contains("modeled: the links of mem0 (o2ib0)"), "{out}");
    // The client's interface carries every byte it writes: 8 MiB at 64 MB/s is 131 ms at
    // least, however fast this host is.
    let write = &outcome.tests[0].results[0];
    assert!(write.total_s >= 0.13, "{write:?}");
}
