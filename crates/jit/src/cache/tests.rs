use super::*;
use std::os::unix::fs::PermissionsExt;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("anycuda-jit-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).map(|m| m.mode() & 0o777).unwrap_or(0)
}

#[test]
fn stores_and_loads_and_creates_private_files() {
    let dir = temp_dir("roundtrip");
    let c = Cache::open(&dir, DEFAULT_LIMIT).expect("cache");
    assert_eq!(mode(&dir), 0o700, "directory mode");
    let k = key(&[b"ptx", b"target"]);
    assert!(c.load(&k).is_none());
    c.store(&k, b"object bytes");
    assert_eq!(c.load(&k).as_deref(), Some(&b"object bytes"[..]));
    assert_eq!(mode(&c.path_for(&k)), 0o600, "entry mode");
    assert_eq!(mode(&dir.join(SECRET)), 0o600, "secret mode");
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A second process (a second open) shares the secret and the entries.
    let again = Cache::open(&dir, DEFAULT_LIMIT).expect("cache");
    assert_eq!(again.load(&k).as_deref(), Some(&b"object bytes"[..]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keys_depend_on_every_part_and_its_boundaries() {
    let k = key(&[b"a", b"t"]);
    assert_ne!(k, key(&[b"b", b"t"]));
    assert_ne!(k, key(&[b"a", b"u"]));
    assert_ne!(key(&[b"ab", b"t"]), key(&[b"a", b"bt"]));
}

#[test]
fn an_entry_copied_over_another_kernels_entry_is_a_miss() {
    let dir = temp_dir("swap");
    let c = Cache::open(&dir, DEFAULT_LIMIT).expect("cache");
    let (a, b) = (key(&[b"kernel a"]), key(&[b"kernel b"]));
    c.store(&a, b"code of a");
    c.store(&b, b"code of b");
    // Copy a's file over b's.
    std::fs::copy(c.path_for(&a), c.path_for(&b)).expect("copy");
    assert!(c.load(&b).is_none(), "a's entry stands in for b");
    // Forge it properly: a's payload, b's key in the header, and a MAC made
    // without the directory's secret (here: under a different secret).
    let forger = Cache { dir: dir.clone(), secret: [7; 32], limit: DEFAULT_LIMIT, size: AtomicU64::new(0), evicting: Mutex::new(()) };
    std::fs::write(c.path_for(&b), forger.encode(&b, b"code of a")).expect("write");
    assert!(c.load(&b).is_none(), "forged entry accepted");
    // The genuine entry still loads.
    assert_eq!(c.load(&a).as_deref(), Some(&b"code of a"[..]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn corrupt_and_truncated_entries_are_misses() {
    let dir = temp_dir("corrupt");
    let c = Cache::open(&dir, DEFAULT_LIMIT).expect("cache");
    let k = key(&[b"ptx"]);
    c.store(&k, b"0123456789");
    let path = c.path_for(&k);
    let good = std::fs::read(&path).expect("read");
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    std::fs::write(&path, &bad).expect("write");
    assert!(c.load(&k).is_none(), "corrupt payload");
    std::fs::write(&path, &good[..good.len() - 3]).expect("write");
    assert!(c.load(&k).is_none(), "truncated");
    std::fs::write(&path, b"not an entry").expect("write");
    assert!(c.load(&k).is_none(), "garbage");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn symbolic_links_are_never_followed() {
    let dir = temp_dir("links");
    let c = Cache::open(&dir, DEFAULT_LIMIT).expect("cache");
    let k = key(&[b"linked"]);
    // A valid entry elsewhere, linked in under the key's name.
    let elsewhere = temp_dir("links-target");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let outside = elsewhere.join("entry");
    std::fs::write(&outside, c.encode(&k, b"code")).expect("write");
    std::os::unix::fs::symlink(&outside, c.path_for(&k)).expect("symlink");
    assert!(c.load(&k).is_none(), "a linked entry was read");
    // Storing replaces the link itself and leaves its target alone.
    c.store(&k, b"new code");
    assert_eq!(std::fs::read(&outside).expect("read"), c.encode(&k, b"code"), "the store wrote through the link");
    assert!(!std::fs::symlink_metadata(c.path_for(&k)).expect("meta").file_type().is_symlink());
    assert_eq!(c.load(&k).as_deref(), Some(&b"new code"[..]));
    // A cache directory that is a link is refused.
    let link_dir = temp_dir("links-dir");
    std::os::unix::fs::symlink(&dir, &link_dir).expect("symlink");
    assert!(Cache::open(&link_dir, DEFAULT_LIMIT).is_none(), "linked directory used");
    let _ = std::fs::remove_file(&link_dir);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[test]
fn directories_and_entries_others_can_write_are_refused() {
    let dir = temp_dir("perms");
    let c = Cache::open(&dir, DEFAULT_LIMIT).expect("cache");
    let k = key(&[b"k"]);
    c.store(&k, b"code");
    // A group-writable entry is a miss.
    std::fs::set_permissions(c.path_for(&k), std::fs::Permissions::from_mode(0o660)).expect("chmod");
    assert!(c.load(&k).is_none(), "group-writable entry used");
    std::fs::set_permissions(c.path_for(&k), std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert!(c.load(&k).is_some());
    // A world-writable directory is refused.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    assert!(Cache::open(&dir, DEFAULT_LIMIT).is_none(), "world-writable directory used");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    // A secret others can read or write is refused too.
    std::fs::set_permissions(dir.join(SECRET), std::fs::Permissions::from_mode(0o666)).expect("chmod");
    assert!(Cache::open(&dir, DEFAULT_LIMIT).is_none(), "writable secret used");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn trust_rules() {
    let me = 1000;
    assert_eq!(trust_problem(Kind::Dir, me, 0o700, me, true), None);
    assert_eq!(trust_problem(Kind::File, me, 0o644, me, false), None);
    assert_eq!(trust_problem(Kind::File, 0, 0o600, me, false), Some("belongs to another user"));
    assert_eq!(trust_problem(Kind::Dir, 0, 0o700, me, true), Some("belongs to another user"));
    assert_eq!(trust_problem(Kind::Dir, me, 0o770, me, true), Some("is writable by group or others"));
    assert_eq!(trust_problem(Kind::File, me, 0o602, me, false), Some("is writable by group or others"));
    assert_eq!(trust_problem(Kind::Link, me, 0o777, me, false), Some("is a symbolic link"));
    assert_eq!(trust_problem(Kind::File, me, 0o700, me, true), Some("is not a directory"));
    assert_eq!(trust_problem(Kind::Other, me, 0o600, me, false), Some("is not a regular file"));
}

#[test]
fn entries_owned_by_another_user_are_refused_when_that_can_be_arranged() {
    // Only root can give a file away; elsewhere the rule is covered by
    // `trust_rules`, and here the file stays the process's own.
    let dir = temp_dir("owner");
    let c = Cache::open(&dir, DEFAULT_LIMIT).expect("cache");
    let k = key(&[b"owned"]);
    c.store(&k, b"code");
    let path = std::ffi::CString::new(c.path_for(&k).as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid C string; chown fails harmlessly without privileges.
    let given = unsafe { libc::chown(path.as_ptr(), 4242, 4242) } == 0;
    assert_eq!(c.load(&k).is_none(), given, "ownership not checked (given away: {given})");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_least_recently_used_entries_go_first_past_the_limit() {
    let dir = temp_dir("lru");
    let c = Cache::open(&dir, 4 * 1024).expect("cache");
    let payload = vec![0u8; 1000];
    let keys: Vec<[u8; 32]> = (0..3u8).map(|i| key(&[&[i]])).collect();
    for (i, k) in keys.iter().enumerate() {
        c.store(k, &payload);
        // Distinct, increasing times.
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i as u64);
        File::options().write(true).open(c.path_for(k)).and_then(|f| f.set_modified(t)).expect("mtime");
    }
    // Use the oldest: it becomes the most recent.
    assert!(c.load(&keys[0]).is_some());
    // Two more entries pass the limit (5 x ~1.1 KB > 4 KiB).
    c.store(&key(&[b"d"]), &payload);
    c.store(&key(&[b"e"]), &payload);
    assert!(c.load(&keys[0]).is_some(), "the recently used entry was evicted");
    assert!(c.load(&keys[1]).is_none(), "the least recently used entry is still there");
    assert!(c.load(&key(&[b"e"])).is_some(), "the newest entry was evicted");
    let total: u64 = c.scan().iter().map(|e| e.1).sum();
    assert!(total <= 4 * 1024, "{total} bytes left");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sizes_parse_with_suffixes() {
    assert_eq!(parse_size("4096"), Some(4096));
    assert_eq!(parse_size("4G"), Some(4 << 30));
    assert_eq!(parse_size("512m"), Some(512 << 20));
    assert_eq!(parse_size(" 2 K"), Some(2048));
    assert_eq!(parse_size("lots"), None);
    assert_eq!(parse_size(""), None);
    assert_eq!(parse_size("99999999999T"), None);
}
