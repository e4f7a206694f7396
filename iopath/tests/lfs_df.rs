//! `iopath lfs df` against a running stack of processes: a row per storage target, named
//! after the file system as Lustre names it, with the figures the targets' file systems
//! report, and their sum.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;
use common::{NetworkEntry, NodeEntry, RoleName, Stack, StackFile};

/// Two storage servers of two targets.
fn df_stack() -> StackFile {
    StackFile::named("df-test")
        .description("two storage servers of two targets")
        .network(NetworkEntry::named("o2ib0"))
        .node(NodeEntry::new("c", RoleName::Client).nid("o2ib0", 100))
        .node(
            NodeEntry::new("oss", RoleName::Oss)
                .count(2)
                .nid("o2ib0", 10)
                .targets(2),
        )
        .node(NodeEntry::new("mds", RoleName::Mds).nid("o2ib0", 1))
}

/// statvfs(3) of `dir`: (1 KiB blocks, 1 KiB blocks available).
fn statvfs_kib(dir: &std::path::Path) -> (u64, u64) {
    let out = std::process::Command::new("stat")
        .args(["-f", "-c", "%S %b %a"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (v[0] * v[1] / 1024, v[0] * v[2] / 1024)
}

#[test]
fn lfs_df_lists_every_target_with_its_file_systems_figures_and_their_sum() {
    let stack = Stack::start(&df_stack());
    let out = stack.lfs(&["df"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("iopath-OST"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        names,
        [
            "iopath-OST0000_UUID",
            "iopath-OST0001_UUID",
            "iopath-OST0002_UUID",
            "iopath-OST0003_UUID"
        ],
        "{text}"
    );
    // Every target lives on this machine's file system under the stack's directory: its
    // size is that file system's.
    let (total_kib, _) = statvfs_kib(&stack.storage());
    for row in &rows {
        assert_eq!(row[1].parse::<u64>().unwrap(), total_kib, "{text}");
    }
    let summary: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("filesystem_summary:"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(summary[1].parse::<u64>().unwrap(), 4 * total_kib);
    // -h: the same sizes with a unit, `252.0G`: every size column of every target row.
    let human = String::from_utf8(stack.lfs(&["df", "-h"]).stdout).unwrap();
    let rows: Vec<&str> = human
        .lines()
        .filter(|l| l.starts_with("iopath-OST"))
        .collect();
    assert_eq!(rows.len(), 4, "{human}");
    for row in rows {
        for size in row.split_whitespace().skip(1).take(3) {
            let (number, unit) = size.split_at(size.len() - 1);
            assert!(
                "BKMGTP".contains(unit) && number.parse::<f64>().is_ok(),
                "{size:?} in {row:?}"
            );
        }
    }
    stack.stop();
}

#[test]
fn a_stack_named_scratch_names_its_targets_scratch_in_lfs_lctl_and_its_table() {
    let stack = Stack::start(&df_stack().fsname("scratch"));
    // The table `up` prints: each storage server's targets, by name.
    let oss1 = stack.table.iter().find(|l| l.starts_with("oss1 ")).unwrap();
    assert!(
        oss1.contains("targets scratch-OST0001 scratch-OST0003"),
        "{oss1}"
    );
    // lfs df: a row per target UUID.
    let out = stack.lfs(&["df"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.contains("OST"))
        .collect();
    assert_eq!(
        names,
        [
            "scratch-OST0000_UUID",
            "scratch-OST0001_UUID",
            "scratch-OST0002_UUID",
            "scratch-OST0003_UUID"
        ],
        "{text}"
    );
    // lctl: the storage server's parameters, named after its targets.
    let lctl = |args: &[&str]| common::lctl(stack.admin("oss1"), args);
    assert_eq!(
        lctl(&["get_param", "-N", "obdfilter.*.sync_journal"]),
        "obdfilter.scratch-OST0001.sync_journal\nobdfilter.scratch-OST0003.sync_journal\n"
    );
    assert_eq!(
        lctl(&["get_param", "obdfilter.scratch-OST0003.sync_journal"]),
        "obdfilter.scratch-OST0003.sync_journal=0\n"
    );
    assert!(
        lctl(&["list_param", "-R", "obdfilter"])
            .contains("obdfilter.scratch-OST0001.last_committed\n")
    );
    // As Lustre's: a pattern lists what it names, a target's directory for `obdfilter.*`.
    for list in [&["list_param"][..], &["get_param", "-N"][..]] {
        assert_eq!(
            lctl(&[list, &["obdfilter.*"][..]].concat()),
            "obdfilter.scratch-OST0001\nobdfilter.scratch-OST0003\n",
            "{list:?}"
        );
    }
    assert_eq!(lctl(&["list_param", "-F", "obdfilter"]), "obdfilter/\n");
    assert_eq!(
        lctl(&["dl"]),
        "  0 UP obdfilter scratch-OST0001 scratch-OST0001_UUID\n  \
         1 UP obdfilter scratch-OST0003 scratch-OST0003_UUID\n"
    );
    // Lustre's stats layout: `lfs df` asked each target for its capacity once.
    let stats = lctl(&["get_param", "obdfilter.scratch-OST0001.stats"]);
    assert!(stats.contains("snapshot_time             "), "{stats}");
    assert!(
        stats.contains("\nstatfs                    1 samples [reqs]\n"),
        "{stats}"
    );
    assert!(
        lctl(&["get_param", "obdfilter.scratch-OST0001.brw_stats"])
            .contains("pages per bulk r/w     rpcs  % cum % |  rpcs        % cum %\n")
    );
    common::lctl_with_secret(
        stack.admin("oss1"),
        &stack.secret_file(),
        &["set_param", "obdfilter.scratch-OST0001.stats=clear"],
    );
    let cleared = lctl(&["get_param", "obdfilter.scratch-OST0001.stats"]);
    assert!(!cleared.contains("statfs"), "{cleared}");
    let out = common::iopath()
        .args(["lctl", "--admin", stack.admin("mds"), "dl"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "  0 UP mdt scratch-MDT0000 scratch-MDT0000_UUID\n"
    );
    // The mount-less path: lfs find takes the target by its name.
    assert!(
        stack
            .lfs(&["setstripe", "-c", "1", "-i", "3", "/f"])
            .status
            .success()
    );
    let out = stack.lfs(&["find", "/", "--ost", "scratch-OST0003"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "/f\n");
    stack.stop();
}
