//! Unmodified programs through `iopath mount`: `dd`, `cmp`, `cp -a`, `diff -r`, `fio` and
//! plain POSIX calls on a stack of processes mounted with FUSE, a storage server killed under
//! fio among them. Every byte goes through the client library (descriptors, pulls,
//! checksums, journals, replay).
//!
//! Needs /dev/fuse, `fusermount3` (fuse3) and `fio`: scripts/test installs them; a machine
//! without them fails these tests, saying which is missing.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{
    FyodModeName, JournalName, NetworkEntry, NodeEntry, RoleName, Stack, StackFile, iopath,
};

/// The crash tests' stack (two storage servers of two targets, files over all four, async
/// journals that commit only when forced, so a killed server loses exactly what clients must
/// replay).
fn stack_file() -> StackFile {
    common::crash_stack(JournalName::Async)
}

/// ASCI Red's shape: a compute node behind a fyod in `mode` (pfs or ufs) before the same
/// two storage servers.
fn fyod_stack_file(mode: FyodModeName) -> StackFile {
    StackFile::named("mount-fyod-test")
        .description("a compute node behind a fyod")
        .stripe_size(1 << 20)
        .stripe_count(-1)
        .network(NetworkEntry::named("mesh0"))
        .node(
            NodeEntry::new("c", RoleName::Client)
                .count(1)
                .nid("mesh0", 100),
        )
        .node(
            NodeEntry::new("fyod", RoleName::Fyod)
                .count(1)
                .nid("mesh0", 20)
                .fyod_mode(mode),
        )
        .node(
            NodeEntry::new("oss", RoleName::Oss)
                .count(2)
                .nid("mesh0", 10)
                .targets(2)
                .journal(JournalName::Async),
        )
        .node(NodeEntry::new("mds", RoleName::Mds).nid("mesh0", 1))
}

/// A tool the tests need, or a loud failure naming it and who installs it.
fn require(tool: &str) {
    common::require_tool(tool, "fuse3 fio");
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: this machine cannot mount FUSE file systems"
    );
}

/// `iopath mount` of a stack, unmounted when dropped (also when a test fails).
struct Mounted {
    child: Option<Child>,
    dir: PathBuf,
    _scratch: tempfile::TempDir,
}

impl Mounted {
    fn new(stack: &Stack) -> Mounted {
        Self::with(stack, &[])
    }

    /// Mounted through the fyod at `fyod`.
    fn through(stack: &Stack, fyod: &str) -> Mounted {
        Self::with(stack, &["--fyod", fyod])
    }

    fn with(stack: &Stack, extra: &[&str]) -> Mounted {
        Self::logging(stack, extra, false)
    }

    /// Mounted, its log written to `mount.log` beside the mount point (see [`Mounted::log`]).
    fn logged(stack: &Stack) -> Mounted {
        Self::logging(stack, &[], true)
    }

    fn logging(stack: &Stack, extra: &[&str], to_file: bool) -> Mounted {
        require("fusermount3");
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("mnt");
        std::fs::create_dir(&dir).unwrap();
        let stderr = if to_file {
            Stdio::from(std::fs::File::create(scratch.path().join("mount.log")).unwrap())
        } else {
            Stdio::inherit()
        };
        let mut command = iopath();
        if to_file {
            // Every call's failure, said or not, is in the file.
            command.env("IOPATH_LOG", "debug");
        }
        let mut child = command
            .args(["mount", "--mds", &stack.mds])
            .args(extra)
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        common::ready_words(child.stdout.take().unwrap())
            .unwrap_or_else(|line| panic!("iopath mount said {line:?}"));
        Mounted {
            child: Some(child),
            dir,
            _scratch: scratch,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// What the mount logged, if it was [`Mounted::logged`].
    fn log(&self) -> Vec<u8> {
        std::fs::read(self._scratch.path().join("mount.log")).unwrap()
    }

    /// Ctrl-C: unmount, commit, leave. Returns whether `iopath mount` exited 0.
    fn unmount(mut self) -> bool {
        self.stop()
    }

    fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = Command::new("fusermount3")
                    .args(["-u", "-z"])
                    .arg(&self.dir)
                    .status();
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs a shell command line; panics with its output if it fails.
fn sh(line: &str) -> String {
    let out = Command::new("sh").args(["-c", line]).output().unwrap();
    assert!(
        out.status.success(),
        "`{line}` failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn dd_writes_and_cmp_reads_back_files_from_empty_to_a_gibibyte() {
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    let src = tempfile::tempdir_in(".").unwrap();
    // Sizes around every boundary the path has: empty, a byte, a page, a chunk, a stripe,
    // a packet of 4 MiB, a stripe row, and a gibibyte.
    let sizes: [u64; 10] = [
        0,
        1,
        4095,
        4096,
        65_537,
        (1 << 20) + 3,
        (4 << 20) - 1,
        (7 << 20) + 5,
        64 << 20,
        1 << 30,
    ];
    for size in sizes {
        let from = src.path().join(format!("f{size}"));
        sh(&format!(
            "head -c {size} /dev/urandom > {from}",
            from = from.display()
        ));
        let to = mnt.path(&format!("f{size}"));
        sh(&format!(
            "dd if={} of={} bs=1M status=none",
            from.display(),
            to.display()
        ));
        assert_eq!(std::fs::metadata(&to).unwrap().len(), size);
        sh(&format!("cmp {} {}", from.display(), to.display()));
        // Read again with another block size, not a divisor of the stripe.
        sh(&format!(
            "dd if={} bs=777k status=none | cmp - {}",
            to.display(),
            from.display()
        ));
    }
    assert!(mnt.unmount(), "iopath mount exits 0 after Ctrl-C");
    stack.stop();
}

#[test]
fn cp_a_copies_a_nested_tree_that_diff_r_finds_equal() {
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    let src = tempfile::tempdir_in(".").unwrap();
    let tree = src.path().join("tree");
    for (dir, files) in [("", 3), ("a", 2), ("a/b", 4), ("a/b/c/d", 1), ("e", 0)] {
        std::fs::create_dir_all(tree.join(dir)).unwrap();
        for i in 0..files {
            sh(&format!(
                "head -c {} /dev/urandom > {}",
                i * 300_001 + 17,
                tree.join(dir).join(format!("file{i}")).display()
            ));
        }
    }
    std::fs::write(tree.join("empty"), b"").unwrap();
    sh(&format!("cp -a {} {}", tree.display(), mnt.dir.display()));
    sh(&format!(
        "diff -r {} {}",
        tree.display(),
        mnt.path("tree").display()
    ));
    // And back out again, with a second tool.
    let back = src.path().join("back");
    std::fs::create_dir(&back).unwrap();
    sh(&format!(
        "tar -C {} -cf - tree | tar -C {} -xf -",
        mnt.dir.display(),
        back.display()
    ));
    sh(&format!(
        "diff -r {} {}",
        tree.display(),
        back.join("tree").display()
    ));
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn fio_verifies_striped_files_written_by_several_jobs_at_once() {
    require("fio");
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    // Four writers at once, each its own file over all four targets; then each reads its
    // file back and checks every block's crc32c.
    let out = sh(&format!(
        "fio --name=verify --directory={} --rw=write --bs=1M --size=48M --numjobs=4 \
         --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
         --group_reporting --output-format=json",
        mnt.dir.display()
    ));
    let json: serde_json::Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    let job = &json["jobs"][0];
    assert_eq!(job["error"], 0, "fio reports no error: {job}");
    assert_eq!(job["write"]["io_bytes"], (4 * 48) << 20);
    assert_eq!(
        job["read"]["io_bytes"],
        (4 * 48) << 20,
        "verify read back everything"
    );
    // The files really are striped: lfs sees four objects on four targets.
    let stripe = stack.lfs(&["getstripe", "/verify.0.0"]);
    let text = String::from_utf8_lossy(&stripe.stdout);
    assert!(text.contains("lmm_stripe_count:  4"), "{text}");
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn concurrent_writers_to_distinct_files_each_read_back_their_own() {
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    let src = tempfile::tempdir_in(".").unwrap();
    let writers: Vec<(PathBuf, Child)> = (0..6)
        .map(|i| {
            let from = src.path().join(format!("w{i}"));
            sh(&format!(
                "head -c {} /dev/urandom > {}",
                (i + 1) * 3_000_001,
                from.display()
            ));
            let child = Command::new("dd")
                .arg(format!("if={}", from.display()))
                .arg(format!("of={}", mnt.path(&format!("w{i}")).display()))
                .args(["bs=256k", "status=none"])
                .spawn()
                .unwrap();
            (from, child)
        })
        .collect();
    for (i, (from, mut child)) in writers.into_iter().enumerate() {
        assert!(child.wait().unwrap().success(), "writer {i}");
        sh(&format!(
            "cmp {} {}",
            from.display(),
            mnt.path(&format!("w{i}")).display()
        ));
    }
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn names_truncate_and_errors_behave_as_posix_says() {
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    let errno = |r: std::io::Result<()>| r.unwrap_err().raw_os_error().unwrap();
    std::fs::write(mnt.path("a"), b"first").unwrap();
    std::fs::write(mnt.path("b"), b"second").unwrap();
    // A rename over an existing file replaces it; the old name is gone.
    std::fs::rename(mnt.path("a"), mnt.path("b")).unwrap();
    assert_eq!(std::fs::read(mnt.path("b")).unwrap(), b"first");
    assert_eq!(
        errno(std::fs::metadata(mnt.path("a")).map(drop)),
        libc::ENOENT
    );
    // A directory renamed takes its subtree with it.
    std::fs::create_dir_all(mnt.path("d/e")).unwrap();
    std::fs::write(mnt.path("d/e/f"), b"deep").unwrap();
    std::fs::rename(mnt.path("d"), mnt.path("moved")).unwrap();
    assert_eq!(std::fs::read(mnt.path("moved/e/f")).unwrap(), b"deep");
    assert_eq!(
        errno(std::fs::metadata(mnt.path("d/e/f")).map(drop)),
        libc::ENOENT
    );
    // Errors as POSIX names them.
    assert_eq!(errno(std::fs::create_dir(mnt.path("moved"))), libc::EEXIST);
    assert_eq!(
        errno(std::fs::remove_dir(mnt.path("moved"))),
        libc::ENOTEMPTY
    );
    assert_eq!(
        errno(std::fs::write(mnt.path("b/x"), b"")),
        libc::ENOTDIR,
        "a file is not a directory"
    );
    assert_eq!(
        errno(std::fs::remove_file(mnt.path("nothing"))),
        libc::ENOENT
    );
    assert_eq!(errno(std::fs::remove_file(mnt.path("moved"))), libc::EISDIR);
    // Unlink and rmdir remove.
    std::fs::remove_file(mnt.path("moved/e/f")).unwrap();
    std::fs::remove_dir(mnt.path("moved/e")).unwrap();
    std::fs::remove_dir(mnt.path("moved")).unwrap();
    let names: Vec<String> = std::fs::read_dir(&mnt.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["b"]);
    // Truncate: cut, then extend with a hole that reads as zeros; O_TRUNC empties.
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8 | 1).collect();
    std::fs::write(mnt.path("t"), &data).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(mnt.path("t"))
        .unwrap();
    f.set_len(1_500_001).unwrap();
    assert_eq!(std::fs::read(mnt.path("t")).unwrap(), &data[..1_500_001]);
    f.set_len(2_500_000).unwrap();
    let back = std::fs::read(mnt.path("t")).unwrap();
    assert_eq!(&back[..1_500_001], &data[..1_500_001]);
    assert!(
        back[1_500_001..].iter().all(|&b| b == 0),
        "the extension is a hole"
    );
    drop(f);
    std::fs::write(mnt.path("t"), b"short").unwrap();
    assert_eq!(std::fs::read(mnt.path("t")).unwrap(), b"short");
    // A listing's inode numbers are the ones stat gives (`ls -i` of a directory reads them
    // from readdir).
    let listed = sh(&format!("ls -i {}", mnt.dir.display()));
    let stat_ino = sh(&format!("stat -c %i {}", mnt.path("t").display()));
    let row = listed
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("t"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(
        row.split_whitespace().next(),
        Some(stat_ino.trim()),
        "{listed}"
    );
    // statfs: the targets' file systems together, not made-up figures.
    let df = sh(&format!("stat -f -c '%b %S' {}", mnt.dir.display()));
    let blocks: u64 = df.split_whitespace().next().unwrap().parse().unwrap();
    assert!(blocks > 0, "df shows a size: {df}");
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn fio_verify_passes_after_a_storage_server_is_killed_under_it() {
    require("fio");
    let mut stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    // fio writes 2 x 96 MiB and then verifies; oss1 is SIGKILLed while it writes, with
    // async journals that have committed nothing, and started again on the same disk. The
    // mount's client must replay every write oss1 acknowledged for fio's verify to pass.
    let fio = Command::new("fio")
        .args([
            "--name=crash",
            &format!("--directory={}", mnt.dir.display()),
            "--rw=write",
            "--bs=1M",
            "--size=96M",
            "--numjobs=2",
            "--verify=crc32c",
            "--do_verify=1",
            "--verify_fatal=1",
            // fio would leave its verify state in the working directory (the crate's).
            "--verify_state_save=0",
            "--group_reporting",
            "--output-format=json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill once some of the files are written.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(mnt.path("crash.0.0")).map_or(0, |m| m.len()) < 16 << 20 {
        assert!(Instant::now() < deadline, "fio wrote nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    stack.kill("oss1");
    std::thread::sleep(Duration::from_millis(500));
    stack.restart("oss1");
    let out = fio.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "fio failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let job = &json["jobs"][0];
    assert_eq!(job["error"], 0);
    assert_eq!(
        job["read"]["io_bytes"],
        (2 * 96) << 20,
        "every block verified"
    );
    assert!(mnt.unmount());
    let logs = stack.stop();
    let recoveries: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("recovery over"))
        .collect();
    assert!(!recoveries.is_empty(), "oss1 recovered: {logs}");
    assert!(
        recoveries.iter().all(|l| l.contains("evicted=0")),
        "the mount's client replayed; nobody was evicted: {recoveries:?}"
    );
}

#[test]
fn a_mount_point_that_is_not_an_empty_directory_is_refused_clearly() {
    let stack = Stack::start(&stack_file());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x"), b"").unwrap();
    let out = iopath()
        .args(["mount", "--mds", &stack.mds])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not empty"), "{err}");
    let out = iopath()
        .args(["mount", "--mds", &stack.mds])
        .arg(dir.path().join("missing"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such directory"));
    stack.stop();
}

/// Through a fyod, in PFS and UFS mode: data, a tree, truncate and statfs as direct-attached.
fn through_a_fyod(mode: FyodModeName) {
    let stack = Stack::start(&fyod_stack_file(mode));
    let mnt = Mounted::through(&stack, stack.nid("fyod0"));
    let src = tempfile::tempdir_in(".").unwrap();
    let from = src.path().join("data");
    sh(&format!(
        "head -c 9000001 /dev/urandom > {}",
        from.display()
    ));
    sh(&format!(
        "dd if={} of={} bs=1M status=none && cmp {} {}",
        from.display(),
        mnt.path("data").display(),
        from.display(),
        mnt.path("data").display()
    ));
    std::fs::create_dir_all(mnt.path("d/e")).unwrap();
    sh(&format!(
        "cp {} {}",
        from.display(),
        mnt.path("d/e/copy").display()
    ));
    sh(&format!(
        "cmp {} {}",
        from.display(),
        mnt.path("d/e/copy").display()
    ));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(mnt.path("data"))
        .unwrap();
    f.set_len(1_000_003).unwrap();
    drop(f);
    let original = std::fs::read(&from).unwrap();
    assert_eq!(
        std::fs::read(mnt.path("data")).unwrap(),
        &original[..1_000_003]
    );
    let df = sh(&format!("stat -f -c '%b' {}", mnt.dir.display()));
    assert!(df.trim().parse::<u64>().unwrap() > 0, "{df}");
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn through_a_pfs_fyod_data_truncate_and_statfs_work() {
    through_a_fyod(FyodModeName::Pfs);
}

#[test]
fn through_a_ufs_fyod_data_truncate_and_statfs_work() {
    through_a_fyod(FyodModeName::Ufs);
}

#[test]
fn bench_mount_measures_the_mount_the_passthrough_and_the_raw_directory() {
    require("fio");
    require("bindfs");
    let dir = tempfile::tempdir_in(".").unwrap();
    // A small tree for tar: files, a directory, a symbolic link.
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    for i in 0..5 {
        std::fs::write(tree.join(format!("sub/f{i}")), vec![b'x'; 100 * i + 1]).unwrap();
    }
    std::os::unix::fs::symlink("sub/f1", tree.join("link")).unwrap();
    let out = iopath()
        .args([
            "bench",
            "mount",
            "--jobs",
            "2",
            "--size",
            "8m",
            "--small-size",
            "256k",
            "--runs",
            "2",
            "--create-jobs",
            "2",
            "--create-files",
            "20",
            "--json",
            "--tar-source",
        ])
        .arg(&tree)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["stack"], "spider-mini", "the default the help names");
    let places = json["places"].as_array().unwrap();
    let names: Vec<&str> = places.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["iopath mount", "bindfs passthrough", "raw directory"]
    );
    let metrics = [
        "seq_write_mib_s",
        "seq_read_mib_s",
        "rand4k_write_mib_s",
        "rand4k_read_mib_s",
        "tar_x_s",
        "creates_per_s",
    ];
    for p in places {
        let measured = p["measured"].as_array().unwrap();
        let found: Vec<&str> = measured
            .iter()
            .map(|m| m["metric"].as_str().unwrap())
            .collect();
        assert_eq!(found, metrics, "{p}");
        for m in measured {
            let runs: Vec<f64> = m["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(runs.len(), 2, "{m}");
            assert!(runs.iter().all(|v| *v > 0.0), "{m}");
            // The median of two runs is their mean (to rounding: the sum's order differs).
            let mean = (runs[0] + runs[1]) / 2.0;
            let median = m["median"].as_f64().unwrap();
            assert!((median - mean).abs() <= mean * 1e-12, "{m}");
        }
    }
    let ratios = json["ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), metrics.len());
    assert!(
        ratios
            .iter()
            .all(|r| r["vs_passthrough"].as_f64().unwrap() > 0.0)
    );
    assert!(json["modeled"].as_str().unwrap().contains("nothing"));
    // Nothing is left mounted, and the temporary directory is gone.
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(
        !mounts.contains(&dir.path().display().to_string()),
        "{mounts}"
    );
}

#[test]
fn lfs_takes_paths_under_the_mount_and_new_files_take_their_directorys_layout() {
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    std::fs::create_dir(mnt.path("two")).unwrap();
    // `lfs setstripe` on the mounted directory, with no --mds: the mount names its stack.
    let dir = mnt.path("two");
    let out = iopath()
        .args(["lfs", "setstripe", "-c", "2", "-S", "2m"])
        .arg(&dir)
        .env_remove("IOPATH_MDS")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // An unmodified program creates a file there: it takes the directory's default.
    sh(&format!(
        "head -c 5000000 /dev/urandom > {}",
        mnt.path("two/f").display()
    ));
    let out = iopath()
        .args(["lfs", "getstripe"])
        .arg(mnt.path("two/f"))
        .env_remove("IOPATH_MDS")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("lmm_stripe_count:  2"), "{text}");
    assert!(text.contains("lmm_stripe_size:   2097152"), "{text}");
    assert!(text.starts_with("/two/f"), "named as in the stack: {text}");
    // A path outside any mount, with no --mds, is a clear error.
    let out = iopath()
        .args(["lfs", "getstripe", "/nowhere/f"])
        .env_remove("IOPATH_MDS")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("which stack?"));
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn a_mount_names_its_file_system_and_lfs_ls_l_agrees_with_ls_l_on_it() {
    let stack = Stack::start(&stack_file().fsname("scratch"));
    let mnt = Mounted::new(&stack);
    // The source names the stack and its file system, as Lustre's `mgsnode:/fsname`.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let source = mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(mnt.dir.to_str().unwrap()))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    assert_eq!(source, format!("{}:/scratch", stack.mds));
    // Files made through lfs (no kernel cache of their attributes), a directory, then the
    // listing both ways: lfs on the mounted path, and ls on the mount.
    let local = mnt._scratch.path().join("local");
    std::fs::write(&local, vec![5u8; 1_234_567]).unwrap();
    let lfs = |args: &[&str]| {
        let out = iopath()
            .arg("lfs")
            .args(args)
            .env_remove("IOPATH_MDS")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "lfs {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let under = |rel: &str| mnt.path(rel).display().to_string();
    lfs(&["mkdir", &under("d")]);
    lfs(&["mkdir", &under("d/sub")]);
    lfs(&["put", local.to_str().unwrap(), &under("d/big")]);
    lfs(&["setstripe", "-c", "2", &under("d/empty")]);
    let listed = lfs(&["ls", "-l", &under("d")]);
    let out = Command::new("ls")
        .args(["-l"])
        .arg(mnt.path("d"))
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let ls = String::from_utf8(out.stdout).unwrap();
    // Every column but the time, which the kernel may keep for itself.
    let columns = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| {
                let cols: Vec<String> = l.split_whitespace().map(str::to_owned).collect();
                if cols[0] == "total" {
                    cols
                } else {
                    [&cols[..5], &cols[8..]].concat()
                }
            })
            .collect()
    };
    assert_eq!(columns(&listed), columns(&ls), "lfs:\n{listed}ls:\n{ls}");
    assert_eq!(listed.lines().count(), 4, "{listed}");
    // getstripe -v through the mount: the targets' layout, as Lustre prints it.
    let verbose = lfs(&["getstripe", "-v", &under("d/empty")]);
    assert!(
        verbose.contains("lmm_magic:         0x0BD10BD0\n"),
        "{verbose}"
    );
    assert!(verbose.contains("lmm_stripe_count:  2\n"), "{verbose}");
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn a_mount_whose_process_died_is_reported_stale_with_the_command_that_clears_it() {
    let stack = Stack::start(&stack_file());
    let mut mnt = Mounted::new(&stack);
    let child = mnt.child.as_mut().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let out = iopath()
        .args(["mount", "--mds", &stack.mds])
        .arg(&mnt.dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stale"), "{err}");
    assert!(
        err.contains(&format!("fusermount3 -u {}", mnt.dir.display())),
        "{err}"
    );
    // The command it names clears it.
    let status = Command::new("fusermount3")
        .arg("-u")
        .arg(&mnt.dir)
        .status()
        .unwrap();
    assert!(status.success());
    mnt.child = None;
    let again = Mounted::new(&stack);
    assert!(again.unmount());
    stack.stop();
}

#[test]
fn a_storage_server_that_stays_down_is_an_io_error_not_a_hang() {
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    std::fs::write(mnt.path("f"), vec![7u8; 4 << 20]).unwrap();
    sh(&format!("sync {}", mnt.path("f").display()));
    stack.kill("oss1");
    // The read needs oss1's objects: the client reconnects for a bounded time, then the
    // program is told. `timeout` only guards the test against a hang; it is not a speed.
    let started = Instant::now();
    let out = Command::new("timeout")
        .args(["300", "cat"])
        .arg(mnt.path("f"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(124), "cat hung for 300 s");
    assert!(!out.status.success());
    assert!(err.contains("Input/output error"), "{err}");
    eprintln!(
        "the read failed after {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        err.trim()
    );
    // Leaving, the mount cannot commit on the server that is down: it says so and exits 1.
    assert!(
        !mnt.unmount(),
        "iopath mount reports the close it could not finish"
    );
    stack.stop();
}

#[test]
fn up_mount_mounts_the_stack_it_starts_and_unmounts_when_it_stops() {
    require("fusermount3");
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("mnt");
    std::fs::create_dir(&dir).unwrap();
    let mut up = iopath()
        .args(["up", "--preset", "spider-mini", "--mount"])
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(up.stdout.take().unwrap()).lines();
    let mut said = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.starts_with("ready") {
            break;
        }
    }
    assert!(said.contains("mounted: the client on c0"), "{said}");
    let data: Vec<u8> = (0..2_500_000u32).map(|i| (i * 7 % 253) as u8).collect();
    std::fs::write(dir.join("f"), &data).unwrap();
    assert_eq!(std::fs::read(dir.join("f")).unwrap(), data);
    drop(up.stdin.take());
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(up.wait().unwrap().success());
    assert_eq!(rest.last().map(String::as_str), Some("stopped"), "{rest:?}");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(
        !mounts.contains(&dir.display().to_string()),
        "unmounted: {mounts}"
    );
}

#[test]
fn a_mount_whose_stack_stops_unmounts_and_exits_1() {
    let stack = Stack::start(&stack_file());
    let mut mnt = Mounted::new(&stack);
    assert!(std::fs::read_dir(&mnt.dir).unwrap().next().is_none());
    stack.stop();
    // The mount watches its metadata service; silent for about 20 s, it unmounts.
    let mut child = mnt.child.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the mount outlived its stack");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!status.success(), "a mount that lost its stack exits 1");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&mnt.dir.display().to_string()), "{mounts}");
}

/// Runs `line` in `dir` with sh; panics with its output if it fails; returns its output.
fn sh_in(dir: &Path, line: &str) -> String {
    sh(&format!("cd {} && {line}", dir.display()))
}

/// `stat -c FORMAT path`, trimmed.
fn stat_c(format: &str, path: &Path) -> String {
    sh(&format!("stat -c '{format}' {}", path.display()))
        .trim()
        .to_owned()
}

#[test]
fn make_rebuilds_a_target_whose_input_was_written_since() {
    require("make");
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    sh_in(
        &mnt.dir,
        "printf 'out: in\\n\\tcp in out\\n' > Makefile && echo v1 > in && make",
    );
    assert_eq!(std::fs::read(mnt.path("out")).unwrap(), b"v1\n");
    // Both into the past (rather than waiting for a clock to tick): the next write of `in`
    // is then newer than `out` on any clock.
    sh_in(&mnt.dir, "touch -d @1000000000 in out");
    assert_eq!(stat_c("%Y", &mnt.path("in")), "1000000000");
    let made = sh_in(&mnt.dir, "echo v2 > in && make");
    assert!(made.contains("cp in out"), "make rebuilt: {made}");
    assert_eq!(std::fs::read(mnt.path("out")).unwrap(), b"v2\n");
    let again = sh_in(&mnt.dir, "make");
    assert!(again.contains("up to date"), "{again}");
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn git_status_sees_an_in_place_edit() {
    require("git");
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    let git = "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main";
    sh_in(&mnt.dir, &format!("{git} init -q repo"));
    let repo = mnt.path("repo");
    // The file's time in the past, so the index's entry is not "racily clean" (which git
    // would check by content): only its times can tell git the file changed.
    sh_in(
        &repo,
        &format!("echo first > f && touch -d @1000000000 f && {git} add f && {git} commit -qm one"),
    );
    assert_eq!(sh_in(&repo, &format!("{git} status --porcelain")), "");
    // An edit in place, of the same length: the name, the inode and the size stay.
    sh_in(
        &repo,
        "printf 'other\\n' | dd of=f conv=notrunc status=none",
    );
    assert_eq!(std::fs::read(repo.join("f")).unwrap(), b"other\n");
    assert_eq!(sh_in(&repo, &format!("{git} status --porcelain")), " M f\n");
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn a_second_rsync_a_sends_nothing_and_modes_owners_and_times_are_kept() {
    require("rsync");
    assert_eq!(
        sh("id -u").trim(),
        "0",
        "this test sets owners with chown: run it as root (as scripts/test is)"
    );
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    let src = tempfile::tempdir_in(".").unwrap();
    let tree = src.path().join("tree");
    for (dir, files) in [("", 3), ("a", 2), ("a/b", 4)] {
        std::fs::create_dir_all(tree.join(dir)).unwrap();
        for i in 0..files {
            let file = tree.join(dir).join(format!("f{i}"));
            std::fs::write(&file, vec![b'x'; i * 1000 + 7]).unwrap();
        }
    }
    sh(&format!(
        "chmod 600 {t}/f0 && chmod 751 {t}/a && chown 1234:5678 {t}/a/f1 && touch -d @1000000000 {t}/f2 && chmod 2755 {t}/a/b",
        t = tree.display()
    ));
    let rsync = format!(
        "rsync -a -i {}/ {}/",
        tree.display(),
        mnt.path("copy").display()
    );
    let first = sh(&rsync);
    assert!(
        first.lines().count() >= 9,
        "the first copies everything: {first}"
    );
    let second = sh(&rsync);
    assert_eq!(second, "", "the second finds every file up to date");
    let copy = mnt.path("copy");
    assert_eq!(stat_c("%a", &copy.join("f0")), "600");
    assert_eq!(stat_c("%a", &copy.join("a")), "751");
    assert_eq!(stat_c("%a", &copy.join("a/b")), "2755");
    assert_eq!(stat_c("%u:%g", &copy.join("a/f1")), "1234:5678");
    assert_eq!(stat_c("%Y", &copy.join("f2")), "1000000000");
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn writes_move_mtime_and_ctime_and_times_modes_and_sizes_survive_server_crashes() {
    let mut stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    let f = mnt.path("f");
    std::fs::write(&f, vec![3u8; 3_000_001]).unwrap();
    sh(&format!(
        "touch -d @1000000000.5 {} && chmod 640 {}",
        f.display(),
        f.display()
    ));
    let set = stat_c("%.9Y %a %s", &f);
    assert_eq!(set, "1000000000.500000000 640 3000001");
    // A write moves the modification and change times, seen at once and after the close.
    let mut file = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
    std::io::Write::write_all(&mut file, b"more").unwrap();
    let while_open = std::fs::metadata(&f).unwrap();
    let wrote = while_open.modified().unwrap();
    assert!(wrote > std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_001));
    drop(file);
    let after_close = std::fs::metadata(&f).unwrap();
    assert_eq!(after_close.modified().unwrap(), wrote);
    assert!(std::os::unix::fs::MetadataExt::ctime(&after_close) >= 1_000_000_001);
    let g = mnt.path("g");
    std::fs::write(&g, b"g").unwrap();
    sh(&format!("touch -d @1200000000 {}", g.display()));
    let before = (stat_c("%.9Y %a %s", &f), stat_c("%.9Y %s", &g));
    // The metadata service and a storage server killed and started again: the times live
    // in the metadata service's log, the bytes in the journal and in the mount's replay.
    stack.kill("mds");
    stack.restart("mds");
    stack.kill("oss1");
    std::thread::sleep(Duration::from_millis(200));
    stack.restart("oss1");
    // Another mount, which has cached nothing, asks the servers.
    let other = Mounted::new(&stack);
    let (f, g) = (other.path("f"), other.path("g"));
    let after = (stat_c("%.9Y %a %s", &f), stat_c("%.9Y %s", &g));
    assert_eq!(after, before);
    let mut expected = vec![3u8; 3_000_001];
    expected.extend_from_slice(b"more");
    assert_eq!(std::fs::read(&f).unwrap(), expected);
    assert!(other.unmount());
    assert!(mnt.unmount());
    stack.stop();
}

/// Every object file the stack's storage servers hold (`O/<16 hex digits>` under each
/// target's directory).
fn object_files(stack: &Stack) -> Vec<PathBuf> {
    let out = sh(&format!(
        "find {} -path '*/O/*' -type f -name '????????????????'",
        stack.storage().display()
    ));
    let mut files: Vec<PathBuf> = out.lines().map(PathBuf::from).collect();
    files.sort();
    files
}

/// Each entry under `dir`, sorted: its path, type, link count, size, mode, and a symbolic
/// link's target; hard links are numbered by the first path seen for their inode.
fn tree_listing(dir: &Path) -> String {
    let out = sh(&format!(
        "cd {} && find . -mindepth 1 -printf '%p %y %n %s %m %l %i\\n' | sort",
        dir.display()
    ));
    let mut first_of_inode = std::collections::HashMap::new();
    out.lines()
        .map(|line| {
            let mut cols: Vec<String> = line.split(' ').map(str::to_owned).collect();
            let ino = cols.pop().unwrap();
            let path = cols[0].clone();
            let first = first_of_inode.entry(ino).or_insert(path);
            let size_column = 3;
            if cols[1] == "d" {
                cols[size_column] = "-".into(); // a directory's size is the file system's own
            }
            format!("{} same-as:{first}", cols.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn symlinks_hard_links_and_fifos_come_through_cp_a_and_tar() {
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::new(&stack);
    let src = tempfile::tempdir_in(".").unwrap();
    let tree = src.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("file"), vec![9u8; 1_500_000]).unwrap();
    sh(&format!(
        "cd {} && ln file sub/hard && ln -s ../file sub/rel && ln -s /nowhere/at/all dangling \
         && ln -s sub dirlink && mkfifo fifo && chmod 640 fifo",
        tree.display()
    ));
    let expected = tree_listing(&tree);
    assert!(expected.contains("./sub/hard f 2"), "{expected}");
    sh(&format!("cp -a {} {}", tree.display(), mnt.dir.display()));
    let copied = mnt.path("tree");
    assert_eq!(tree_listing(&copied), expected, "cp -a");
    assert_eq!(
        std::fs::read_link(copied.join("sub/rel")).unwrap(),
        Path::new("../file")
    );
    assert_eq!(
        std::fs::read(copied.join("sub/rel")).unwrap(),
        vec![9u8; 1_500_000]
    );
    assert_eq!(
        std::fs::read_dir(copied.join("dirlink")).unwrap().count(),
        2
    );
    sh(&format!("mkdir {}", mnt.path("untarred").display()));
    sh(&format!(
        "tar -C {} -cf - . | tar -C {} -xf -",
        tree.display(),
        mnt.path("untarred").display()
    ));
    assert_eq!(tree_listing(&mnt.path("untarred")), expected, "tar");
    // And back out of the mount, by tar.
    let back = src.path().join("back");
    std::fs::create_dir(&back).unwrap();
    sh(&format!(
        "tar -C {} -cf - . | tar -C {} -xf -",
        copied.display(),
        back.display()
    ));
    assert_eq!(tree_listing(&back), expected, "tar out of the mount");
    // A FIFO on the mount carries bytes (the kernel's pipe).
    let fifo = mnt.path("tree/fifo");
    let reader = Command::new("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    sh(&format!("echo through > {}", fifo.display()));
    assert_eq!(reader.wait_with_output().unwrap().stdout, b"through\n");
    // Removing one name of a hard link keeps the other's bytes.
    std::fs::remove_file(copied.join("file")).unwrap();
    assert_eq!(stat_c("%h", &copied.join("sub/hard")), "1");
    assert_eq!(
        std::fs::read(copied.join("sub/hard")).unwrap(),
        vec![9u8; 1_500_000]
    );
    assert!(mnt.unmount());
    stack.stop();
}

#[test]
fn a_file_unlinked_while_open_is_kept_until_the_last_close() {
    require("python3");
    let stack = Stack::start(&stack_file());
    let mnt = Mounted::logged(&stack);
    let before = object_files(&stack);
    // Python's TemporaryFile: made, unlinked at once, then written, read back and stat'd
    // through its descriptor.
    let script = format!(
        r#"
import os, sys, tempfile
f = tempfile.TemporaryFile(dir={dir:?})
data = bytes(range(251)) * 20000
f.write(data)
f.flush()
f.seek(0)
assert f.read() == data, "read back"
st = os.fstat(f.fileno())
assert st.st_size == len(data), st
assert st.st_nlink == 0, st
assert os.listdir({dir:?}) == [], os.listdir({dir:?})
print(len(os.listdir({dir:?})), flush=True)
sys.stdin.read()
f.close()
"#,
        dir = mnt.dir.display().to_string()
    );
    let mut python = Command::new("python3")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(python.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "0\n", "python got as far as the open file's checks");
    // While it is open its objects are kept; the name is gone.
    let held = object_files(&stack);
    assert_eq!(held.len(), before.len() + 4, "{held:?}");
    drop(python.stdin.take());
    assert!(python.wait().unwrap().success());
    // The last close drops it, objects and all: when the kernel's release (which comes
    // after close returns) is answered.
    let deadline = Instant::now() + Duration::from_secs(20);
    while object_files(&stack) != before {
        assert!(
            Instant::now() < deadline,
            "left: {:?}",
            object_files(&stack)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = mnt.log();
    assert!(
        !log.contains(&0u8),
        "the mount's log holds a NUL: {}",
        String::from_utf8_lossy(&log)
    );
    assert!(mnt.unmount());
    stack.stop();
}
