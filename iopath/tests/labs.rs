//! The labs' commands, run as the labs write them: each `iopath ...` line of a lab's code
//! blocks is run (with the binary under test), and what the lab says of its output is checked.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `iopath ...` command lines in `lab`'s code blocks, in order.
fn commands(lab: &str) -> Vec<Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/labs")
        .join(lab);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if inside && let Some(rest) = line.trim().strip_prefix("iopath ") {
            out.push(rest.split_whitespace().map(str::to_owned).collect());
        }
    }
    out
}

/// A scratch directory to run a lab's commands in, with the repository's `docs` beside them:
/// the labs name their stack files as `docs/labs/...`, from the repository's root.
fn lab_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    std::os::unix::fs::symlink(docs.canonicalize().unwrap(), dir.path().join("docs")).unwrap();
    dir
}

/// Runs `iopath ARGS` in a scratch directory; its standard output.
fn run(args: &[String], dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_iopath"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "iopath {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_replay_lab_crashes_a_server_and_the_client_replays_with_nothing_lost() {
    let lines = commands("replay.md");
    assert_eq!(lines.len(), 2, "the lab's two commands: {lines:?}");
    let dir = tempfile::tempdir().unwrap();
    for (args, victim, how) in [
        (&lines[0], "oss0", "leaves the network"),
        (&lines[1], "oss1", "SIGKILL"),
    ] {
        let out = run(args, dir.path());
        // What the lab says: the crash while the writer holds its writes, the restart, the
        // replay, and nothing lost.
        assert!(
            out.contains(&format!("{victim} crashes now (")) && out.contains(how),
            "{out}"
        );
        assert!(
            out.contains("c0 still holds 16 MiB of acknowledged writes to replay"),
            "{out}"
        );
        assert!(
            out.contains(&format!("{victim} starts again on the same disk")),
            "{out}"
        );
        let replayed: u64 = out
            .split("c0 replayed ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no replay count: {out}"));
        assert!(replayed > 0, "c0 replayed nothing: {out}");
        assert!(out.contains("it kept 0 bytes after"), "{out}");
        assert!(
            out.contains("every byte read back matched what was written"),
            "{out}"
        );
    }
}

#[test]
fn the_journal_lab_shows_sync_commits_paying_two_seeks_a_write_and_async_not() {
    let lines = commands("journal.md");
    assert_eq!(lines.len(), 1, "the lab's command: {lines:?}");
    let dir = tempfile::tempdir().unwrap();
    let out = run(&lines[0], dir.path());
    assert!(out.contains("disk modeled"), "{out}");
    // A row's cells: configuration, MiB/s, % of baseline, the paper's, commits, seeks.
    let row = |name: &str| -> (f64, u64, u64) {
        let line = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {out}"));
        let cells: Vec<&str> = line[name.len()..].split_whitespace().collect();
        let percent = cells[1].trim_end_matches('%').parse().unwrap();
        (
            percent,
            cells[3].parse().unwrap(),
            cells[4].parse().unwrap(),
        )
    };
    let (sync_percent, sync_commits, sync_seeks) = row("OST, internal journal, sync commits");
    let (async_percent, async_commits, _) = row("OST, internal journal, async commits");
    // What the lab says: a commit per write, the head moving to the journal and back for
    // each; async commits in groups — and the gap between them.
    assert_eq!(
        sync_commits, 256,
        "one commit per 1 MiB write of 256 MiB: {out}"
    );
    assert_eq!(sync_seeks, 2 * sync_commits, "{out}");
    assert!(async_commits < sync_commits / 10, "{out}");
    assert!(sync_percent < async_percent / 2.0, "{out}");
    // The external journals: the data disk's head stays put, each commit pays its device's
    // own cost; the paper's order, internal sync < SAS < SSD < async.
    let (sas_percent, sas_commits, sas_seeks) =
        row("OST, external journal on SAS tier, sync commits");
    let (ssd_percent, ssd_commits, ssd_seeks) =
        row("OST, external journal on solid-state device, sync commits");
    assert_eq!((sas_commits, ssd_commits), (256, 256), "{out}");
    assert_eq!((sas_seeks, ssd_seeks), (0, 0), "{out}");
    assert!(
        sync_percent < sas_percent && sas_percent < ssd_percent && ssd_percent < async_percent,
        "{out}"
    );
}

#[test]
fn the_iorcd_lab_sees_congestion_track_bandwidth_and_flags_impeded_runs_over_healthy_ones() {
    let lines = commands("iorcd.md");
    assert_eq!(lines.len(), 1, "the lab's command: {lines:?}");
    let dir = tempfile::tempdir().unwrap();
    let out = run(&lines[0], dir.path());
    // The paper's Figures 3, 4 and 7, drawn where the lab says.
    for svg in ["iorcd-write.svg", "iorcd-read.svg", "iorcd-rule.svg"] {
        let text = std::fs::read_to_string(dir.path().join("lab").join(svg)).unwrap();
        // Well-formed, nothing outside its frame, no overlapping labels.
        iopath_plot::check::Drawing::read_clean(&text).unwrap_or_else(|e| panic!("{svg}: {e}"));
    }
    // Congestion tracks bandwidth: a positive correlation for writes.
    let write_r: f64 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("write  r = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no write correlation: {out}"));
    assert!(write_r > 0.0, "write r = {write_r}: {out}");
    // The degraded rule flags impeded runs more often than healthy ones.
    let flagged = |kind: &str| -> u64 {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(kind)?.trim().strip_prefix("flagged "))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {kind} verdict: {out}"))
    };
    assert!(flagged("impeded") > flagged("healthy"), "{out}");
}

/// One step of a trace's text: node, layer, event and the rest of the line.
#[derive(Debug)]
struct Step {
    node: String,
    layer: String,
    event: String,
    detail: String,
}

impl Step {
    /// Its credit counts: `[credits: peer -3, ni 250]`.
    fn credits(&self) -> Vec<(String, i64)> {
        let Some(inside) = self
            .detail
            .split("[credits: ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
        else {
            return Vec::new();
        };
        inside
            .split(", ")
            .map(|pair| {
                let (name, count) = pair.rsplit_once(' ').unwrap();
                (name.to_owned(), count.parse().unwrap())
            })
            .collect()
    }

    fn queued(&self) -> bool {
        self.credits().iter().any(|(_, c)| *c < 0)
    }
}

/// A trace's text as its requests' steps: `write` and `read`, each in time order.
fn requests(out: &str) -> Vec<(String, Vec<Step>)> {
    let mut requests: Vec<(String, Vec<Step>)> = Vec::new();
    for line in out.lines() {
        if let Some(op) = ["write of ", "read of "]
            .iter()
            .find(|p| line.starts_with(**p))
        {
            requests.push((op.split(' ').next().unwrap().to_owned(), Vec::new()));
            continue;
        }
        let cells: Vec<&str> = line.split_whitespace().collect();
        let (Some(request), true) = (
            requests.last_mut(),
            cells.len() > 4 && cells[0].parse::<f64>().is_ok(),
        ) else {
            continue;
        };
        request.1.push(Step {
            node: cells[1].to_owned(),
            layer: cells[2].to_owned(),
            event: cells[3].to_owned(),
            detail: cells[4..].join(" "),
        });
    }
    assert_eq!(requests.len(), 2, "a write and a read: {out}");
    requests
}

/// Where the first step of `steps` that `pred` accepts is.
fn at(steps: &[Step], pred: impl Fn(&Step) -> bool) -> Option<usize> {
    steps.iter().position(pred)
}

#[test]
fn the_trace_lab_shows_each_path_and_a_write_queueing_inside_a_load() {
    let lines = commands("trace.md");
    assert_eq!(lines.len(), 5, "the lab's five commands: {lines:?}");
    let dir = lab_dir();

    // 1. Through routers, async journal: a router forwards the request; the server pulls,
    // records, replies, and commits after; the client keeps the write, then releases it.
    let out = run(&lines[0], dir.path());
    let write = &requests(&out)[0].1;
    fn is<'a>(node: &'a str, event: &'a str) -> impl Fn(&Step) -> bool + 'a {
        move |s: &Step| s.node.starts_with(node) && s.event == event
    }
    assert!(at(write, is("rtr", "forward")).is_some(), "{out}");
    let record = at(write, |s| s.layer == "journal" && s.event == "record").unwrap();
    let reply = at(write, is("oss", "reply")).unwrap();
    let commit = at(write, is("oss", "commit")).unwrap();
    let keep = at(write, is("c0", "keep")).unwrap();
    let release = at(write, is("c0", "release")).unwrap();
    assert!(
        record < reply && reply < commit && reply < keep && commit < release,
        "{out}"
    );
    for svg in ["write.svg", "write-read.svg"] {
        let text = std::fs::read_to_string(dir.path().join(svg)).unwrap();
        iopath_plot::check::Drawing::read_clean(&text).unwrap_or_else(|e| panic!("{svg}: {e}"));
    }

    // 2. Sync journal: the commit before the reply, nothing kept.
    let out = run(&lines[1], dir.path());
    let write = &requests(&out)[0].1;
    assert!(at(write, is("oss", "commit")).unwrap() < at(write, is("oss", "reply")).unwrap());
    assert!(at(write, is("c0", "keep")).is_none(), "{out}");

    // 3. PFS: the fyod splits, and the storage server's GET goes to the compute node.
    let out = run(&lines[2], dir.path());
    let write = &requests(&out)[0].1;
    assert!(at(write, is("fyod", "split")).is_some(), "{out}");
    let get = at(write, |s| {
        s.node.starts_with("oss") && s.event == "send" && s.detail.starts_with("GET")
    })
    .unwrap();
    assert!(write[get].detail.contains("[to c0]"), "{out}");
    assert!(at(write, is("fyod", "verify")).is_none(), "{out}");

    // UFS: the fyod pulls into its buffers, and the storage server from the fyod.
    let out = run(&lines[3], dir.path());
    let write = &requests(&out)[0].1;
    assert!(at(write, is("fyod", "buffer")).is_some(), "{out}");
    let get = at(write, |s| {
        s.node.starts_with("oss") && s.event == "send" && s.detail.starts_with("GET")
    })
    .unwrap();
    assert!(write[get].detail.contains("[to fyod0]"), "{out}");

    // 4. Inside a load: the 16th write of c0 among 32 writers; a router's send to a storage
    // server queued (a negative count), the client's own sends and the routers' buffers never.
    let out = run(&lines[4], dir.path());
    assert!(
        out.contains("modeled: the NICs of rtr0, rtr1, rtr2, rtr3"),
        "{out}"
    );
    assert!(
        out.contains("load: 32 writers on c0, c1, c2, c3, c4, c5, c6, c7 (4 MiB writes")
            && out.contains("the write traced is the 16th c0 issued"),
        "{out}"
    );
    let write = &requests(&out)[0].1;
    let queued: Vec<&Step> = write.iter().filter(|s| s.queued()).collect();
    assert!(
        queued.iter().any(|s| s.node.starts_with("rtr")
            && s.event == "send"
            && s.detail.contains("[to oss")),
        "no router send to a storage server queued: {out}"
    );
    assert!(
        queued
            .iter()
            .all(|s| s.node.starts_with("rtr") && s.event == "send" && s.detail.contains("waited")),
        "only the routers' sends queue, and each says how long: {queued:?}"
    );
}

/// A command left running, stopped (SIGKILL) and waited for when dropped: the test ends it
/// once it has checked what it came to check.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The live lab's IOR runs 40 repetitions: the test needs the first few, and stops it.
const LIVE_LAB_MAX: Duration = Duration::from_secs(180);

#[test]
fn the_live_lab_starves_the_routers_large_buffers_and_never_their_small_ones() {
    let lines = commands("live.md");
    assert_eq!(lines.len(), 1, "the lab's command: {lines:?}");
    let dir = lab_dir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iopath"))
        .args(&lines[0])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let running = Stopped(child);
    // Its lines through a thread, so a run that hangs fails the test instead of holding it.
    let (lines_tx, said) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    // "open the address it prints"
    let url = loop {
        let line = said
            .recv_timeout(LIVE_LAB_MAX.saturating_sub(started.elapsed()))
            .expect("the live lab's command never said where its live view is");
        if let Some(url) = line.strip_prefix("live view: ") {
            break url.trim().to_owned();
        }
    };
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    assert!(common::http_get(&addr, "/").contains("<html"));
    let view: serde_json::Value =
        serde_json::from_str(&common::http_get(&addr, "/view.json")).unwrap();
    let routers: Vec<(String, String)> = view["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["name"].as_str().unwrap().starts_with("rtr"))
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_owned(),
                n["admin"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(routers.len(), 4, "{view}");
    // Each router's pools, as its `buffers` view (the page's third line) says: class bytes
    // count credits min queue, a row per class: the lowest each has been.
    let mins = |admin: &str| -> Vec<(String, i64)> {
        common::lctl(admin, &["get_param", "-n", "buffers"])
            .lines()
            .skip(1)
            .map(|row| {
                let cells: Vec<&str> = row.split_whitespace().collect();
                (cells[0].to_owned(), cells[4].parse().unwrap())
            })
            .collect()
    };
    // What the lab says: the large pool goes below zero under IOR; the tiny and small pools,
    // which carry only requests and replies, never come near it.
    let seen = loop {
        let seen: Vec<(String, Vec<(String, i64)>)> = routers
            .iter()
            .map(|(name, admin)| (name.clone(), mins(admin)))
            .collect();
        let starved = seen.iter().any(|(_, pools)| {
            pools
                .iter()
                .any(|(class, min)| class == "large" && *min < 0)
        });
        if starved {
            break seen;
        }
        assert!(
            started.elapsed() < LIVE_LAB_MAX,
            "no router's large buffers went below zero: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    for (router, pools) in &seen {
        assert_eq!(pools.len(), 3, "{router}: {pools:?}");
        for (class, min) in pools {
            if class != "large" {
                assert!(*min > 0, "{router}'s {class} pool went to {min}: {seen:?}");
            }
        }
    }
    drop(running);
}

#[test]
fn the_placement_lab_overloads_a_link_in_launcher_order_and_placed_writers_finish_together() {
    let lines = commands("placement.md");
    assert_eq!(lines.len(), 1, "the lab's command: {lines:?}");
    let dir = lab_dir();
    let out = run(&lines[0], dir.path());
    // A row: servers writers | MB/s (model, ratio) pairs/link spread | the same placed | gain.
    let numbers = |cell: &str| table_numbers(cell, &out);
    let rows: Vec<Vec<Vec<f64>>> = out
        .lines()
        .filter(|l| l.split('|').count() == 4 && l.trim_start().starts_with(char::is_numeric))
        .map(|l| l.split('|').map(numbers).collect())
        .collect();
    assert_eq!(rows.len(), 3, "a row per server count (2, 4, 8): {out}");
    for row in &rows {
        let (default, placed, gain) = (&row[1], &row[2], &row[3]);
        // [MB/s, model MB/s, ratio, pairs per link, spread ms]
        assert!(
            default[3] > 3.0 && placed[3] <= 3.0,
            "pairs per link: {out}"
        );
        assert!(placed[0] > default[0] * 1.1, "placed faster: {out}");
        assert!(
            placed[4] < default[4] / 2.0,
            "placed closer together: {out}"
        );
        for run in [default, placed] {
            assert!(
                (run[2] - 1.0).abs() <= 0.15,
                "within 15% of the flow model: {out}"
            );
        }
        assert!(
            gain[0] > 10.0 && gain[1] > 10.0,
            "gain measured and modeled: {out}"
        );
    }
    let svg = std::fs::read_to_string(dir.path().join("placement.svg")).unwrap();
    let drawing = iopath_plot::check::Drawing::read_clean(&svg).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        drawing.series.len(),
        4,
        "measured and modeled, default and placed"
    );
}

#[test]
fn the_routing_lab_piles_projection_in_launcher_order_and_spreads_round_robin_unevenly() {
    let lines = commands("routing.md");
    assert_eq!(lines.len(), 1, "the lab's command: {lines:?}");
    let dir = lab_dir();
    let out = run(&lines[0], dir.path());
    // A row: name | routers per writer | MB/s (model, ratio) hops pairs/link busiest share |
    // the same placed | paper.
    let numbers = |cell: &str| table_numbers(cell, &out);
    // A row's figures, default then placed.
    type Runs = (Vec<f64>, Vec<f64>);
    let row = |scheme: &str| -> Runs {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{scheme} ")))
            .unwrap_or_else(|| panic!("no {scheme} row: {out}"));
        let cells: Vec<&str> = line.split('|').collect();
        assert_eq!(cells.len(), 5, "{line}");
        (numbers(cells[2]), numbers(cells[3]))
    };
    // [MB/s, model MB/s, ratio, hops, pairs per link, busiest, share]
    let rows: Vec<(&str, Runs)> = [
        "baseline",
        "nearest",
        "round-robin",
        "projection",
        "fine-grained",
    ]
    .into_iter()
    .map(|s| (s, row(s)))
    .collect();
    let (pd, pp) = &rows[3].1;
    for (scheme, (default, placed)) in &rows {
        for run in [default, placed] {
            assert!(
                (0.7..=1.1).contains(&run[2]),
                "{scheme}: within 30% of the flow model: {out}"
            );
            if *scheme != "projection" || run != pd {
                assert!(
                    pd[0] < run[0],
                    "projection in launcher order is the slowest: {out}"
                );
            }
        }
        let single = ["nearest", "projection", "fine-grained"].contains(scheme);
        for run in [default, placed] {
            if single {
                assert!(
                    (run[5] - 1.0).abs() <= 0.05,
                    "{scheme}: one route, exact: {out}"
                );
            } else {
                assert!(run[5] > 1.1, "{scheme}: round-robin uneven: {out}");
            }
        }
    }
    assert!(
        pd[4] > 3.0 && pp[4] <= 3.0,
        "launcher order piles up a link: {out}"
    );
    // The one run whose model holds an input to its turn at a link with no room (loaded
    // exactly to its rate, every writer on it at its disk's rate) is marked, and explained
    // under the table.
    let marked: Vec<String> = out
        .lines()
        .filter(|l| l.contains('|') && l.contains(")*"))
        .map(|l| l.split('|').next().unwrap_or("").trim().to_owned())
        .collect();
    assert_eq!(marked, ["fine-grained"], "{out}");
    let fine = out
        .lines()
        .find(|l| l.starts_with("fine-grained "))
        .unwrap();
    let cells: Vec<&str> = fine.split('|').collect();
    assert!(
        cells[2].contains(")*") && !cells[3].contains(")*"),
        "{fine}"
    );
    assert!(
        out.contains("\n*: the routes load a port exactly to its capacity"),
        "{out}"
    );
    // The fluid figure beside it, the other bound: every writer at its disk's rate.
    assert!(
        out.contains("(the fluid rates), MB/s: fine-grained default 2831 (1 port)"),
        "{out}"
    );
    assert!(
        pp[0] > 1.15 * pd[0] && pp[1] > 1.15 * pd[1],
        "placement lifts projection: {out}"
    );
    assert!(pp[3] < pd[3] / 2.0, "placed beside its router: {out}");
    let svg = std::fs::read_to_string(dir.path().join("routing.svg")).unwrap();
    let drawing = iopath_plot::check::Drawing::read_clean(&svg).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        drawing.series.len(),
        4,
        "measured and modeled, default and placed"
    );
}

/// The numbers in one cell of a benchmark's table (`2261 ( 2783, 0.81)   3.5   1.56x   79%`,
/// `+51% (+49%)`), in order; `out` is the whole output, for the message if one is not a number.
fn table_numbers(cell: &str, out: &str) -> Vec<f64> {
    cell.split(|c: char| c.is_whitespace() || "(),%+x*".contains(c))
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("{w:?} in {cell:?}: {out}"))
        })
        .collect()
}

/// The fewest and most transfers a task made before the deadline, from `-vv`'s line per
/// task (`task 3: write iteration 0: open ..., 19 transfers in ...`).
fn stonewall_pairs(out: &str) -> (u64, u64) {
    let counts: Vec<u64> = out
        .lines()
        .filter(|l| l.starts_with("task ") && l.contains(": write iteration "))
        .filter_map(|l| {
            let before = l.split(" transfers in ").next()?;
            before.rsplit(' ').next()?.parse().ok()
        })
        .collect();
    assert!(!counts.is_empty(), "no task lines: {out}");
    (
        counts.iter().copied().min().unwrap_or(0),
        counts.iter().copied().max().unwrap_or(0),
    )
}

#[test]
fn the_chain_lab_shares_one_link_geometrically_and_flat_cards_do_not() {
    let lines = commands("chain.md");
    assert_eq!(lines.len(), 2, "the lab's two commands: {lines:?}");
    let dir = lab_dir();
    // The torus crossed hop by hop: the task next to the server gets far more than the
    // farthest (the paper's 1/2 against 1/8; the lab's run 19 against 6 transfers).
    let out = run(&lines[0], dir.path());
    let (fewest, most) = stonewall_pairs(&out);
    assert!(most >= 2 * fewest.max(1), "{fewest}..{most}: {out}");
    // The flow model's prediction for the same machine beside it: the chain's shares.
    let line = out
        .lines()
        .find(|l| l.starts_with("flow model ("))
        .unwrap_or_else(|| panic!("no flow model line: {out}"));
    let ratio: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((ratio - 1.0).abs() <= 0.15, "{line}");
    assert!(
        out.contains("per task, MiB/s: model 5.0 5.0 10.0 20.0;"),
        "{out}"
    );
    // The lab's `sed` line, as it writes it: the same file without hop_by_hop.
    let chain = std::fs::read_to_string(dir.path().join("docs/labs/chain.toml")).unwrap();
    let flat = chain.replace("hop_by_hop = true", "hop_by_hop = false");
    assert_ne!(flat, chain);
    std::fs::write(dir.path().join("flat.toml"), flat).unwrap();
    let out = run(&lines[1], dir.path());
    let (fewest, most) = stonewall_pairs(&out);
    assert!(
        most <= fewest + fewest / 5 + 1,
        "every card its own: {fewest}..{most}: {out}"
    );
    assert!(
        !out.contains("flow model"),
        "no torus, no prediction: {out}"
    );
}

#[test]
fn the_fyods_lab_shows_one_fyod_falling_and_four_scaling_to_the_disks() {
    let lines = commands("fyods.md");
    assert_eq!(
        lines.len(),
        2,
        "the lab's command and its vanishing: {lines:?}"
    );
    let dir = lab_dir();
    let out = run(&lines[0], dir.path());
    // The write table: a row per fyod count, "measured (paper)" per node count.
    let table: Vec<(u32, Vec<f64>)> = out
        .lines()
        .skip_while(|l| !l.starts_with("aggregate write"))
        .skip(2)
        .take_while(|l| l.contains('|'))
        .map(|l| {
            let (fyods, cells) = l.split_once('|').unwrap();
            let measured = cells
                .split(')')
                .filter(|c| c.contains('('))
                .map(|c| c.split('(').next().unwrap().trim().parse().unwrap())
                .collect();
            (fyods.trim().parse().unwrap(), measured)
        })
        .collect();
    let row = |f: u32| {
        &table
            .iter()
            .find(|(n, _)| *n == f)
            .unwrap_or_else(|| panic!("{out}"))
            .1
    };
    // Columns: 16, 32, 64, 128, 256 nodes.
    let one = row(1);
    assert_eq!(one.len(), 5, "{out}");
    assert!(
        one[4] < 0.4 * one[1] && one[3] < 0.6 * one[1],
        "one fyod falls: {out}"
    );
    for f in [4, 8, 16] {
        assert!(
            row(f)[3] > 550.0 && row(f)[4] > 550.0,
            "{f} fyods scale: {out}"
        );
    }
    assert!(
        row(8)[4] < 1.15 * row(4)[4],
        "past one per 64 adds little: {out}"
    );
    assert!(
        row(2)[4] < 0.5 * row(4)[4],
        "two fyods of 128 nodes page: {out}"
    );
    // The mechanism, counted: nearly every call of one fyod serving 128 nodes paged.
    let paged: f64 = out
        .split("1x128 ")
        .nth(1)
        .and_then(|rest| rest.split('%').next())
        .and_then(|share| share.parse().ok())
        .unwrap_or_else(|| panic!("no paging share for 1 fyod x 128 nodes: {out}"));
    assert!(paged > 90.0, "{paged}% paged: {out}");
    let svg = std::fs::read_to_string(dir.path().join("fyods.svg")).unwrap();
    iopath_plot::check::Drawing::read_clean(&svg).unwrap_or_else(|e| panic!("{e}"));
    // Make it vanish: memory for a thousand threads, and one fyod holds its rate.
    let out = run(&lines[1], dir.path());
    let flat: Vec<f64> = out
        .lines()
        .find(|l| l.trim_start().starts_with("1 |"))
        .unwrap()
        .split('|')
        .nth(1)
        .unwrap()
        .split(')')
        .filter(|c| c.contains('('))
        .map(|c| c.split('(').next().unwrap().trim().parse().unwrap())
        .collect();
    let (lo, hi) = flat
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    assert!(lo > 0.85 * hi, "no fall without paging: {flat:?}: {out}");
}
