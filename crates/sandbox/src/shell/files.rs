//! A container's file system as the shell sees it: a few directories and files in memory, kept
//! for the container's life so that one exec reads what another wrote, and the volumes mounted
//! in it (an `emptyDir` kept for its pod's life, across restarts; a `hostPath` shared by the
//! pods of its node), each a file system of its own under its mount path. No file is on the
//! machine the sandbox runs on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;

/// The directories every container has.
const DIRS: [&str; 12] =
    ["/", "/bin", "/dev", "/etc", "/home", "/proc", "/root", "/sys", "/tmp", "/usr", "/usr/bin", "/var"];

/// Why a file operation failed, in the C library's words.
pub(crate) type Errno = &'static str;
const ENOENT: Errno = "No such file or directory";
const EISDIR: Errno = "Is a directory";
const ENOTDIR: Errno = "Not a directory";

/// Files and directories by absolute path.
#[derive(Debug)]
pub(crate) struct Files {
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    dirs: Mutex<BTreeSet<String>>,
    /// Volumes by mount path, the deepest first.
    mounts: Vec<(String, Arc<Files>)>,
}

impl Files {
    /// The base directories, `/bin` listing `commands`, and `files`.
    pub(crate) fn new(commands: &[&str], files: Vec<(String, Vec<u8>)>) -> Self {
        let dirs = DIRS.iter().map(|d| (*d).to_owned()).collect();
        let mut all: BTreeMap<String, Vec<u8>> = files.into_iter().collect();
        // `:` is the shell's alone; every other command is a file in /bin, as busybox links them.
        for c in commands.iter().filter(|c| **c != ":") {
            all.insert(format!("/bin/{c}"), Vec::new());
        }
        all.insert("/dev/null".to_owned(), Vec::new());
        Self { files: Mutex::new(all), dirs: Mutex::new(dirs), mounts: Vec::new() }
    }

    /// An empty volume: its root directory alone.
    pub(crate) fn volume() -> Self {
        Self {
            files: Mutex::default(),
            dirs: Mutex::new(["/".to_owned()].into_iter().collect()),
            mounts: Vec::new(),
        }
    }

    /// These files with `volumes` mounted (mount path, volume), their mount points made
    /// directories (and their parents).
    pub(crate) fn with_mounts(mut self, volumes: Vec<(String, Arc<Files>)>) -> Self {
        for (at, _) in &volumes {
            let mut dir = String::new();
            for part in at.split('/').filter(|p| !p.is_empty()) {
                dir = format!("{dir}/{part}");
                self.dirs.lock().insert(dir.clone());
            }
        }
        self.mounts = volumes;
        self.mounts.sort_by_key(|(at, _)| std::cmp::Reverse(at.len()));
        self
    }

    /// The file system `path` is on, and the path there.
    fn route(&self, path: &str) -> Option<(&Files, String)> {
        self.mounts.iter().find_map(|(at, fs)| {
            let rest = path.strip_prefix(at.as_str())?;
            (rest.is_empty() || rest.starts_with('/'))
                .then(|| (&**fs, if rest.is_empty() { "/".to_owned() } else { rest.to_owned() }))
        })
    }

    pub(crate) fn is_dir(&self, path: &str) -> bool {
        if let Some((fs, inner)) = self.route(path) {
            return fs.is_dir(&inner);
        }
        self.dirs.lock().contains(path)
    }

    pub(crate) fn exists(&self, path: &str) -> bool {
        if let Some((fs, inner)) = self.route(path) {
            return fs.exists(&inner);
        }
        self.is_dir(path) || self.files.lock().contains_key(path)
    }

    /// Whether `path` is a file, and its size.
    pub(crate) fn file_size(&self, path: &str) -> Option<usize> {
        if let Some((fs, inner)) = self.route(path) {
            return fs.file_size(&inner);
        }
        self.files.lock().get(path).map(Vec::len)
    }

    pub(crate) fn read(&self, path: &str) -> Result<Vec<u8>, Errno> {
        if let Some((fs, inner)) = self.route(path) {
            return fs.read(&inner);
        }
        if self.is_dir(path) {
            return Err(EISDIR);
        }
        if path == "/dev/null" {
            return Ok(Vec::new());
        }
        self.files.lock().get(path).cloned().ok_or(ENOENT)
    }

    /// Writes (or appends) `data` to the file at `path`, in an existing directory.
    pub(crate) fn write(&self, path: &str, data: &[u8], append: bool) -> Result<(), Errno> {
        if let Some((fs, inner)) = self.route(path) {
            return fs.write(&inner, data, append);
        }
        if path == "/dev/null" {
            return Ok(());
        }
        if self.is_dir(path) {
            return Err(EISDIR);
        }
        self.parent_is_dir(path)?;
        let mut files = self.files.lock();
        let file = files.entry(path.to_owned()).or_default();
        if !append {
            file.clear();
        }
        file.extend_from_slice(data);
        Ok(())
    }

    pub(crate) fn mkdir(&self, path: &str) -> Result<(), Errno> {
        if let Some((fs, inner)) = self.route(path) {
            return fs.mkdir(&inner);
        }
        if self.exists(path) {
            return Err("File exists");
        }
        self.parent_is_dir(path)?;
        self.dirs.lock().insert(path.to_owned());
        Ok(())
    }

    pub(crate) fn remove(&self, path: &str) -> Result<(), Errno> {
        if let Some((fs, inner)) = self.route(path) {
            return fs.remove(&inner);
        }
        if self.is_dir(path) {
            return Err(EISDIR);
        }
        self.files.lock().remove(path).map(|_| ()).ok_or(ENOENT)
    }

    /// The names in the directory `path`, sorted; a file lists itself.
    pub(crate) fn list(&self, path: &str) -> Result<Vec<String>, Errno> {
        if let Some((fs, inner)) = self.route(path) {
            return fs.list(&inner);
        }
        if !self.is_dir(path) {
            return if self.files.lock().contains_key(path) {
                Ok(vec![path.to_owned()])
            } else {
                Err(ENOENT)
            };
        }
        let prefix = if path == "/" { "/".to_owned() } else { format!("{path}/") };
        let child = |p: &String| {
            p.strip_prefix(&prefix).filter(|r| !r.is_empty() && !r.contains('/')).map(str::to_owned)
        };
        let mut names: BTreeSet<String> = self.dirs.lock().iter().filter_map(child).collect();
        names.extend(self.files.lock().keys().filter_map(child));
        Ok(names.into_iter().collect())
    }

    fn parent_is_dir(&self, path: &str) -> Result<(), Errno> {
        let parent = path.rsplit_once('/').map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
        if self.is_dir(parent) {
            Ok(())
        } else if self.files.lock().contains_key(parent) {
            Err(ENOTDIR)
        } else {
            Err(ENOENT)
        }
    }
}

/// `path` made absolute against `cwd`, with `.` and `..` resolved.
pub(crate) fn join(cwd: &str, path: &str) -> String {
    let full = if path.starts_with('/') { path.to_owned() } else { format!("{cwd}/{path}") };
    let mut parts: Vec<&str> = Vec::new();
    for p in full.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_live_in_directories_and_paths_resolve() {
        let fs = Files::new(&["echo"], vec![("/etc/hostname".into(), b"web\n".to_vec())]);
        assert_eq!(fs.read("/etc/hostname").unwrap(), b"web\n");
        assert_eq!(fs.read("/etc"), Err(EISDIR));
        assert_eq!(fs.write("/nope/x", b"", false), Err(ENOENT));
        fs.write("/tmp/a", b"1", false).unwrap();
        fs.write("/tmp/a", b"2", true).unwrap();
        assert_eq!(fs.read("/tmp/a").unwrap(), b"12");
        assert_eq!(fs.list("/tmp").unwrap(), ["a"]);
        assert!(fs.list("/").unwrap().contains(&"bin".to_owned()));
        assert_eq!(fs.list("/bin").unwrap(), ["echo"]);
        assert_eq!(join("/tmp", "../etc/./hosts"), "/etc/hosts");
        assert_eq!(join("/", ".."), "/");
    }

    #[test]
    fn a_volume_is_shared_by_the_file_systems_that_mount_it() {
        let data = Arc::new(Files::volume());
        let one = Files::new(&[], vec![]).with_mounts(vec![("/data".into(), Arc::clone(&data))]);
        let two = Files::new(&[], vec![]).with_mounts(vec![("/mnt/shared".into(), Arc::clone(&data))]);
        assert!(one.is_dir("/data") && two.is_dir("/mnt") && two.is_dir("/mnt/shared"));
        one.write("/data/foo", b"x", false).unwrap();
        assert_eq!(two.read("/mnt/shared/foo").unwrap(), b"x");
        assert_eq!(two.file_size("/mnt/shared/foo"), Some(1));
        assert_eq!(two.list("/mnt/shared").unwrap(), ["foo"]);
        assert!(!one.exists("/datafoo") && !two.exists("/data/foo"));
    }
}
