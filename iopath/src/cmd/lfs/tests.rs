//! `lfs` as a user types it: parsed by clap, run against an in-process stack, its output
//! read back.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use clap::Parser;
use iopath_client::Client;
use iopath_client::FsName;
use iopath_fabric::units::parse_size;
use iopath_stack::testing::{TestStack, TestStackConfig};

use super::ls::{Civil, Owner, time_text};
use super::{LfsCommand, run_to};

const MIB: u64 = 1 << 20;

/// The default test stack: two storage servers with two targets each, async journals.
async fn stack() -> TestStack {
    TestStack::start(TestStackConfig::default()).await.unwrap()
}

/// A seed for a test, printed so a failure can be reproduced: `IOPATH_SEED` or the clock.
fn seed() -> u64 {
    let seed = std::env::var("IOPATH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("seed: {seed} (rerun with IOPATH_SEED={seed})");
    seed
}

/// `len` bytes drawn from `seed` (xorshift64*): a file's contents no two runs share.
fn data(seed: u64, len: u64) -> Vec<u8> {
    let mut state = seed.max(1);
    let mut out = Vec::with_capacity(len as usize + 8);
    while (out.len() as u64) < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        out.extend_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len as usize);
    out
}

#[derive(Parser, Debug)]
struct Lfs {
    #[command(subcommand)]
    command: LfsCommand,
}

/// `lfs LINE` as the binary parses it: Lustre's one-dash spellings first made two-dash.
fn parse(line: &str) -> LfsCommand {
    let args = std::iter::once("lfs")
        .chain(line.split_whitespace())
        .map(std::ffi::OsString::from)
        .collect();
    Lfs::try_parse_from(super::lustre_spellings(args))
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .command
}

async fn lfs(client: &Client, line: &str) -> String {
    let mut out = Vec::new();
    run_to(client, parse(line), &mut out)
        .await
        .unwrap_or_else(|e| panic!("lfs {line}: {e:#}"));
    String::from_utf8(out).unwrap()
}

async fn lfs_fails(client: &Client, line: &str) -> String {
    let mut out = Vec::new();
    match run_to(client, parse(line), &mut out).await {
        Ok(()) => panic!("lfs {line} succeeded"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn options_parse_as_lfs_spells_them() {
    assert_eq!(
        parse("setstripe -c -1 -S 4M -i 2 /d"),
        LfsCommand::Setstripe {
            stripe_count: -1,
            stripe_size: 4 * MIB,
            stripe_index: 2,
            path: "/d".into()
        }
    );
    assert_eq!(
        parse("setstripe /d"),
        LfsCommand::Setstripe {
            stripe_count: 0,
            stripe_size: 0,
            stripe_index: -1,
            path: "/d".into()
        }
    );
    assert_eq!(
        parse("ls"),
        LfsCommand::Ls {
            long: false,
            human: false,
            help: None,
            path: "/".into()
        }
    );
    assert_eq!(
        parse("ls -lh /d"),
        LfsCommand::Ls {
            long: true,
            human: true,
            help: None,
            path: "/d".into()
        }
    );
    assert!(
        Lfs::try_parse_from(["lfs", "getstripe", "-v", "-y", "/f"]).is_err(),
        "-v is a form of its own, not a modifier of -y"
    );
    assert_eq!(parse_size("64k"), Ok(65536));
    assert_eq!(parse_size("1g"), Ok(1 << 30));
    assert_eq!(
        parse_size("1MiB"),
        Ok(1 << 20),
        "the same sizes as every other command"
    );
    assert!(parse_size("12q").is_err());
    assert!(parse_size("99999999999999999999g").is_err());
    assert!(Lfs::try_parse_from(["lfs", "setstripe", "-S", "lots", "/d"]).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setstripe_put_getstripe_get_stat_ls_rm() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    lfs(&client, "setstripe -c 2 -S 256k -i 1 /new").await;
    let text = lfs(&client, "getstripe /new").await;
    let layout = client.getstripe("/new").await.unwrap();
    let objects = layout.objects();
    // Lustre's layout, field for field.
    let expected = format!(
        "/new\nlmm_stripe_count:  2\nlmm_stripe_size:   262144\nlmm_pattern:       raid0\n\
         lmm_layout_gen:    0\nlmm_stripe_offset: 1\n\tobdidx\t\t objid\t\t objid\t\t group\n\
         \t     1\t{:>14}\t{:>#13x}\t             0\n\
         \t     2\t{:>14}\t{:>#13x}\t             0\n\n",
        objects[0].object_id, objects[0].object_id, objects[1].object_id, objects[1].object_id
    );
    assert_eq!(text, expected);

    // A directory's default, then a file put into it inherits it.
    client.mkdir("/d").await.unwrap();
    lfs(&client, "setstripe -c -1 -S 1m /d").await;
    assert_eq!(
        lfs(&client, "getstripe /d").await,
        "/d\nstripe_count:  -1 stripe_size:   1048576 pattern:       raid0 stripe_offset: -1\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("in.bin");
    let data = data(seed(), 9 * MIB + 5);
    std::fs::write(&local, &data).unwrap();
    let out = lfs(&client, &format!("put {} /d/file", local.display())).await;
    assert_eq!(out, format!("{} bytes copied to /d/file\n", data.len()));
    assert_eq!(client.getstripe("/d/file").await.unwrap().stripe_count(), 4);

    let back = dir.path().join("out.bin");
    lfs(&client, &format!("get /d/file {}", back.display())).await;
    assert!(
        std::fs::read(&back).unwrap() == data,
        "get returns what put stored"
    );

    let stat = lfs(&client, "stat /d/file").await;
    assert!(
        stat.contains(&format!("Size: {:<15}", data.len())),
        "{stat}"
    );
    assert!(stat.contains("Type: regular file"), "{stat}");
    assert!(
        stat.contains("stripe_count: 4 stripe_size: 1048576"),
        "{stat}"
    );
    assert_eq!(lfs(&client, "ls /").await, "d\nnew\n");
    assert_eq!(lfs(&client, "ls /d").await, "file\n");

    lfs(&client, "rm /d/file").await;
    lfs(&client, "rm /d").await;
    lfs(&client, "rm /new").await;
    assert_eq!(lfs(&client, "ls").await, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_commands_fail_with_a_sentence() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let error = lfs_fails(&client, "setstripe -S 100k /x").await;
    assert!(
        error.contains("not a positive multiple of 65536"),
        "{error}"
    );
    let error = lfs_fails(&client, "getstripe /missing").await;
    assert_eq!(
        error,
        "getstripe /missing: /missing: no such file or directory"
    );
    let error = lfs_fails(&client, "put /definitely/not/here /x").await;
    assert!(
        error.starts_with("put /definitely/not/here to /x: open /definitely/not/here"),
        "{error}"
    );
    client.mkdir("/d").await.unwrap();
    client
        .create("/d/f", iopath_client::StripeRequest::INHERIT)
        .await
        .unwrap();
    let error = lfs_fails(&client, "rm /d").await;
    assert!(error.contains("not empty"), "{error}");
    assert_eq!(lfs(&client, "ls /d").await, "f\n");
}

/// What a Lustre user types works as on Lustre: find(1)'s one-dash options, `getstripe -d`,
/// several paths, a directory listing its files, `df PATH`, and stripe counts of -1 or above
/// the targets (capped to them, as Lustre's LOD caps them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lustres_spellings_and_habits_work() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    client.mkdir("/d").await.unwrap();
    client.mkdir("/d/sub").await.unwrap();
    lfs(&client, "setstripe -c 9 /d/wide").await;
    lfs(&client, "setstripe -c -1 /d/all").await;
    lfs(&client, "setstripe -c 1 -i 2 /d/sub/deep.dat").await;
    assert_eq!(lfs(&client, "getstripe -c /d/wide").await, "4\n", "capped");
    assert_eq!(lfs(&client, "getstripe -c /d/all").await, "4\n");
    // A directory keeps the count asked for; its files get every target.
    lfs(&client, "setstripe -c 9 /d/sub").await;
    assert_eq!(lfs(&client, "getstripe -c /d/sub").await, "9\n");
    lfs(&client, "setstripe /d/sub/made").await;
    assert_eq!(lfs(&client, "getstripe -c /d/sub/made").await, "4\n");
    // Several paths: a value each.
    assert_eq!(
        lfs(&client, "getstripe -c /d/wide /d/sub/deep.dat").await,
        "4\n1\n"
    );
    // A directory lists its own default, then each entry; -d the directory alone, no path.
    let listing = lfs(&client, "getstripe /d").await;
    let paths: Vec<&str> = listing.lines().filter(|l| l.starts_with('/')).collect();
    assert_eq!(paths, ["/d", "/d/all", "/d/sub", "/d/wide"], "{listing}");
    assert!(listing.contains("lmm_stripe_count:  4"), "{listing}");
    let alone = lfs(&client, "getstripe -d /d").await;
    assert!(alone.starts_with("stripe_count:  "), "{alone}");
    assert_eq!(alone.lines().count(), 1, "{alone}");
    let deep = lfs(&client, "getstripe -r /d").await;
    assert!(deep.contains("/d/sub/deep.dat\n"), "{deep}");
    // find(1)'s spellings.
    let lines = |text: String| text.lines().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        lines(lfs(&client, "find /d -type f").await),
        ["/d/all", "/d/sub/deep.dat", "/d/sub/made", "/d/wide"]
    );
    assert_eq!(
        lines(lfs(&client, "find /d -type f -maxdepth 1").await),
        ["/d/all", "/d/wide"]
    );
    assert_eq!(
        lines(lfs(&client, "find / -name *.dat").await),
        ["/d/sub/deep.dat"]
    );
    assert_eq!(
        lines(lfs(&client, "find /d -mindepth 2 -type f").await),
        ["/d/sub/deep.dat", "/d/sub/made"]
    );
    assert_eq!(
        lines(lfs(&client, "find /d -size -1").await),
        ["/d/all", "/d/sub/deep.dat", "/d/sub/made", "/d/wide"],
        "empty files: less than one 512-byte block"
    );
    // df takes a path, as Lustre's.
    let df = lfs(&client, "df /d").await;
    assert!(df.contains("filesystem_summary:"), "{df}");
    assert!(lfs_fails(&client, "df /nothing").await.contains("/nothing"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn getstripe_c_s_i_print_values_and_y_prints_yaml() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    lfs(&client, "setstripe -c 2 -S 256k -i 1 /f").await;
    assert_eq!(lfs(&client, "getstripe -c /f").await, "2\n");
    assert_eq!(lfs(&client, "getstripe -S /f").await, "262144\n");
    assert_eq!(lfs(&client, "getstripe -i /f").await, "1\n");
    assert_eq!(
        lfs(&client, "getstripe -c -S /f").await,
        "lmm_stripe_count:  2\nlmm_stripe_size:   262144\n"
    );
    let yaml: serde_norway::Value =
        serde_norway::from_str(&lfs(&client, "getstripe -y /f").await).unwrap();
    assert_eq!(yaml["lmm_stripe_count"], 2);
    assert_eq!(yaml["lmm_stripe_size"], 262144);
    let objects = yaml["lmm_objects"].as_sequence().unwrap();
    let targets: Vec<u32> = client
        .getstripe("/f")
        .await
        .unwrap()
        .objects()
        .iter()
        .map(|o| o.target)
        .collect();
    let listed: Vec<u32> = objects
        .iter()
        .map(|o| o["l_ost_idx"].as_u64().unwrap() as u32)
        .collect();
    assert_eq!(listed, targets);
    // A directory's default, the same way.
    client.mkdir("/d").await.unwrap();
    lfs(&client, "setstripe -c 3 /d").await;
    assert_eq!(lfs(&client, "getstripe -c /d").await, "3\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lfs_mkdir_makes_a_directory_on_the_one_metadata_target() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    lfs(&client, "mkdir /a").await;
    lfs(&client, "mkdir -i 0 -c 1 /b").await;
    assert!(client.stat("/a").await.unwrap().is_dir);
    assert!(client.stat("/b").await.unwrap().is_dir);
    assert!(
        lfs_fails(&client, "mkdir -i 1 /c")
            .await
            .contains("one metadata target")
    );
    assert!(
        lfs_fails(&client, "mkdir -c 4 /c")
            .await
            .contains("one metadata target")
    );
    assert!(lfs_fails(&client, "mkdir /a").await.contains("exists"));
    assert!(
        client.stat("/c").await.is_err(),
        "nothing made on a refusal"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lfs_find_selects_by_name_type_size_stripe_count_and_target() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    client.mkdir("/d").await.unwrap();
    client.mkdir("/d/e").await.unwrap();
    lfs(&client, "setstripe -c 1 -i 2 /d/one.dat").await;
    lfs(&client, "setstripe -c 2 -i 0 /d/e/two.dat").await;
    lfs(&client, "setstripe -c 1 -i 1 /d/e/log.txt").await;
    let write = |path: &'static str, len: usize| {
        let client = client.clone();
        async move {
            let f = client.open(path).await.unwrap();
            f.write_at(0, bytes::Bytes::from(vec![1u8; len]))
                .await
                .unwrap();
            f.close().await.unwrap();
        }
    };
    write("/d/one.dat", 3 << 20).await;
    write("/d/e/two.dat", 100_000).await;
    let lines = |text: String| text.lines().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        lines(lfs(&client, "find /d").await),
        ["/d", "/d/e", "/d/e/log.txt", "/d/e/two.dat", "/d/one.dat"]
    );
    assert_eq!(
        lines(lfs(&client, "find /d --name *.dat").await),
        ["/d/e/two.dat", "/d/one.dat"]
    );
    assert_eq!(
        lines(lfs(&client, "find /d --type d").await),
        ["/d", "/d/e"]
    );
    assert_eq!(
        lines(lfs(&client, "find /d --size +1M").await),
        ["/d/one.dat"]
    );
    assert_eq!(
        lines(lfs(&client, "find /d --size -200k").await),
        ["/d/e/log.txt", "/d/e/two.dat"]
    );
    assert_eq!(
        lines(lfs(&client, "find /d --size -1M").await),
        ["/d/e/log.txt"],
        "sizes round up to the unit, as find's do: 100000 bytes is 1M, not less"
    );
    assert_eq!(
        lines(lfs(&client, "find /d --stripe-count 2").await),
        ["/d/e/two.dat"]
    );
    assert_eq!(lines(lfs(&client, "find / --ost 2").await), ["/d/one.dat"]);
    assert!(
        lfs_fails(&client, "find /d --size lots")
            .await
            .contains("--size")
    );
    assert!(
        lfs_fails(&client, "find /nothing")
            .await
            .contains("/nothing")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn getstripe_v_prints_lustres_fields_of_the_files_real_layout() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    client.mkdir("/d").await.unwrap();
    lfs(&client, "setstripe -c 3 -S 128k -i 2 /d/f").await;
    let stat = client.stat("/d/f").await.unwrap();
    let layout = stat.layout.clone().unwrap();
    let objects = layout.objects();
    let targets: Vec<u32> = objects.iter().map(|o| o.target).collect();
    assert_eq!(targets, [2, 3, 0], "round-robin from target 2 over four");
    let ino = stat.ino;
    assert!(ino > 1, "a file's inode is not the root's");
    // Lustre's `lfs getstripe -v` of a plain layout, field for field and space for space:
    // the file's identity is its inode number (sequence 0, shown as an IGIF FID).
    let mut expected = format!(
        "/d/f\n\
         lmm_magic:         0x0BD10BD0\n\
         lmm_seq:           0\n\
         lmm_object_id:     {ino:#x}\n\
         lmm_fid:           [{ino:#x}:0x0:0x0]\n\
         lmm_stripe_count:  3\n\
         lmm_stripe_size:   131072\n\
         lmm_pattern:       raid0\n\
         lmm_layout_gen:    0\n\
         lmm_stripe_offset: 2\n\
         \tobdidx\t\t objid\t\t objid\t\t group\n"
    );
    for object in objects {
        expected.push_str(&format!(
            "\t{:>6}\t{:>14}\t{:>#13x}\t{:>14}\n",
            object.target, object.object_id, object.object_id, 0
        ));
    }
    expected.push('\n');
    assert_eq!(lfs(&client, "getstripe -v /d/f").await, expected);
    // The same layout without -v is the same text without the identity lines.
    let plain = lfs(&client, "getstripe /d/f").await;
    let without: String = expected
        .lines()
        .filter(|l| {
            !["lmm_magic", "lmm_seq", "lmm_object_id", "lmm_fid"]
                .iter()
                .any(|f| l.starts_with(f))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(plain, without);
    // A second file has another identity.
    lfs(&client, "setstripe -c 1 /d/g").await;
    let other = lfs(&client, "getstripe -v /d/g").await;
    assert!(
        !other.contains(&format!("lmm_object_id:     {ino:#x}\n")),
        "{other}"
    );
    // A directory has no identity lines in Lustre's output either.
    assert_eq!(
        lfs(&client, "getstripe -v -d /d").await,
        lfs(&client, "getstripe -d /d").await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ls_l_lists_type_mode_links_owner_size_time_and_name() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    client.mkdir("/d").await.unwrap();
    client.mkdir("/d/sub").await.unwrap();
    lfs(&client, "setstripe -c 2 -S 64k /d/data").await;
    let file = client.open("/d/data").await.unwrap();
    file.write_at(0, bytes::Bytes::from(vec![7u8; 200_000]))
        .await
        .unwrap();
    file.close().await.unwrap();
    let owner = Owner::invoking();
    let text = lfs(&client, "ls -l /d").await;
    let lines: Vec<&str> = text.lines().collect();
    // 200000 bytes are 391 sectors of 512 bytes: 196 KiB.
    assert_eq!(lines[0], "total 196", "{text}");
    let when = |path: &'static str| {
        let client = client.clone();
        async move {
            let stat = client.stat(path).await.unwrap();
            time_text(Civil::local(stat.mtime_ns / 1_000_000_000), true)
        }
    };
    assert_eq!(
        lines[1],
        format!(
            "-rw-r--r-- 1 {} {} 200000 {} data",
            owner.user,
            owner.group,
            when("/d/data").await
        ),
        "{text}"
    );
    assert_eq!(
        lines[2],
        format!(
            "drwxr-xr-x 2 {} {}      0 {} sub",
            owner.user,
            owner.group,
            when("/d/sub").await
        ),
        "{text}"
    );
    assert_eq!(lines.len(), 3, "{text}");
    // -h: sizes with a unit; a file alone: its line, no total.
    let human = lfs(&client, "ls -lh /d/data").await;
    assert!(human.starts_with("-rw-r--r-- 1 "), "{human}");
    assert!(human.contains(" 196K "), "{human}");
    assert!(human.trim_end().ends_with(" /d/data"), "{human}");
    assert!(
        lfs_fails(&client, "ls -l /nothing")
            .await
            .contains("/nothing")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_carry_the_file_system_name_in_df_and_find() {
    let stack = TestStack::start(TestStackConfig {
        fsname: FsName::new("scratch").unwrap(),
        ..TestStackConfig::default()
    })
    .await
    .unwrap();
    let client = stack.client().await.unwrap();
    assert_eq!(client.fsname().as_str(), "scratch");
    let df = lfs(&client, "df").await;
    let names: Vec<&str> = df
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        [
            "scratch-OST0000_UUID",
            "scratch-OST0001_UUID",
            "scratch-OST0002_UUID",
            "scratch-OST0003_UUID",
            "filesystem_summary:"
        ],
        "{df}"
    );
    lfs(&client, "setstripe -c 1 -i 2 /on2").await;
    lfs(&client, "setstripe -c 1 -i 1 /on1").await;
    for ost in ["2", "scratch-OST0002", "scratch-OST0002_UUID"] {
        assert_eq!(
            lfs(&client, &format!("find / --ost {ost}")).await,
            "/on2\n",
            "{ost}"
        );
    }
    let error = lfs_fails(&client, "find / --ost iopath-OST0002").await;
    assert_eq!(
        error,
        "find --ost iopath-OST0002: iopath-OST0002: this file system is scratch: its storage \
         targets are scratch-OST0000, ..."
    );
    let error = lfs_fails(&client, "find / --ost scratch-OST0009").await;
    assert_eq!(
        error,
        "find --ost scratch-OST0009: scratch has no scratch-OST0009: its 4 targets are \
         scratch-OST0000 to scratch-OST0003"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_that_fails_part_way_leaves_no_partial_file_and_says_so() {
    // Every target takes at most 2 MiB of an object: a 3 MiB put onto one target fails after
    // its first 2 MiB are written.
    let stack = TestStack::start(TestStackConfig {
        object_size_max_bytes: Some(2 * MIB),
        ..TestStackConfig::default()
    })
    .await
    .unwrap();
    let client = stack.client().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("three-mib");
    std::fs::write(&local, vec![7u8; 3 * MIB as usize]).unwrap();

    // The copy the put made is removed, and nothing takes the name.
    let error = lfs_fails(&client, &format!("put {} /new", local.display())).await;
    assert!(error.contains("nothing was put at /new"), "{error}");
    let listed = lfs(&client, "ls /").await;
    assert!(!listed.contains("new"), "no partial file is left: {listed}");

    // An empty file made by setstripe keeps its name and layout, and stays empty.
    lfs(&client, "setstripe -c 1 -i 1 /laid-out").await;
    let error = lfs_fails(&client, &format!("put {} /laid-out", local.display())).await;
    assert!(error.contains("nothing was put at /laid-out"), "{error}");
    let file = client.open("/laid-out").await.unwrap();
    assert_eq!(
        file.size().await.unwrap(),
        0,
        "nothing partial is left in it"
    );
    assert_eq!(file.layout().stripe_offset(), 1);
}

/// Two puts to one name at once each destroyed the other's objects under it ("no such
/// object"), and the name was left holding neither. Each now copies under a name of its own and
/// renames its copy onto the name when it is whole: the name holds one put's bytes, whole, and
/// a put that finds the other's bytes there when it is done says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_puts_to_one_name_leave_one_whole_copy() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let seed = seed();
    let (a, b) = (data(seed, 24 * MIB), data(seed ^ 1, 20 * MIB));
    let (path_a, path_b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&path_a, &a).unwrap();
    std::fs::write(&path_b, &b).unwrap();
    let put = |local: std::path::PathBuf| {
        let client = client.clone();
        tokio::spawn(async move {
            let mut out = Vec::new();
            let line = format!("put {} /one", local.display());
            run_to(&client, parse(&line), &mut out)
                .await
                .map_err(|e| format!("{e:#}"))
        })
    };
    let (first, second) = (put(path_a), put(path_b));
    let outcomes = [first.await.unwrap(), second.await.unwrap()];
    for outcome in &outcomes {
        if let Err(error) = outcome {
            assert!(
                error.contains("was written by someone else") || error.contains("exists and holds"),
                "a put refused says why: {error}"
            );
        }
    }
    assert!(outcomes.iter().any(Result::is_ok), "{outcomes:?}");
    let file = client.open("/one").await.unwrap();
    let size = file.size().await.unwrap();
    let back = file.read_at(0, size).await.unwrap();
    assert!(
        back == a || back == b,
        "one put's bytes, whole ({size} bytes)"
    );
    let listed = lfs(&client, "ls /").await;
    assert!(
        !listed.contains(".put-"),
        "no copy is left behind: {listed}"
    );
}
