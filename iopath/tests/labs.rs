//! The labs' commands, run as the labs write them: each `iopath ...` line of a lab's code
//! blocks is run (with the binary under test), and what the lab says of its output is checked.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::path::Path;
use std::process::Command;

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
    // A row's cells: configuration, MiB/s, % of baseline, commits, seeks.
    let row = |name: &str| -> (f64, u64, u64) {
        let line = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {out}"));
        let cells: Vec<&str> = line[name.len()..].split_whitespace().collect();
        let percent = cells[1].trim_end_matches('%').parse().unwrap();
        (
            percent,
            cells[2].parse().unwrap(),
            cells[3].parse().unwrap(),
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
