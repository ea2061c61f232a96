//! The process's own figures, under the names every Prometheus client library gives them, so the
//! usual memory and CPU panels and alerts work: `process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_start_time_seconds`,
//! `process_open_fds`, `process_max_fds` and `process_threads`.
//!
//! Read from `/proc/self` at each scrape (nothing runs between scrapes). Elsewhere than on Linux
//! the collector reports nothing, and so does any file it cannot read: a scrape never fails for
//! them.

use std::path::Path;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

/// The collector of the process figures; see the [module](self) docs.
#[derive(Debug, Default)]
pub struct ProcessMetrics {
    _private: (),
}

impl ProcessMetrics {
    /// Registers the collector in `registry`.
    pub fn register(registry: &mut Registry) {
        registry.register_collector(Box::new(Self::default()));
    }
}

/// What one reading of `/proc/self` found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// User plus system CPU time, in seconds.
    pub cpu_seconds: f64,
    /// Resident set size, in bytes.
    pub resident_bytes: u64,
    /// Virtual memory size, in bytes.
    pub virtual_bytes: u64,
    /// Threads of the process.
    pub threads: u64,
    /// Start time, in seconds since the Unix epoch.
    pub start_time_seconds: f64,
    /// Open file descriptors, if `/proc/self/fd` could be listed.
    pub open_fds: Option<u64>,
    /// The soft limit on open file descriptors, if there is one.
    pub max_fds: Option<u64>,
}

impl Reading {
    /// Reads the figures of this process; `None` where `/proc/self` cannot be read (not Linux).
    #[must_use]
    pub fn now() -> Option<Self> {
        Self::from_proc(Path::new("/proc"))
    }

    /// Reads them from a procfs mounted at `proc`.
    fn from_proc(proc: &Path) -> Option<Self> {
        let me = proc.join("self");
        let aux = std::fs::read(me.join("auxv")).map(|b| Auxv::parse(&b)).unwrap_or_default();
        let stat = Stat::parse(&std::fs::read_to_string(me.join("stat")).ok()?)?;
        let boot = boot_time(&std::fs::read_to_string(proc.join("stat")).ok()?)?;
        let open_fds =
            std::fs::read_dir(me.join("fd")).ok().map(|d| u64::try_from(d.count()).unwrap_or(u64::MAX));
        let max_fds = std::fs::read_to_string(me.join("limits")).ok().and_then(|l| max_open_files(&l));
        Some(stat.reading(aux, boot, open_fds, max_fds))
    }
}

/// The two figures of the auxiliary vector that turn `/proc/self/stat`'s units into seconds and
/// bytes. Read from the kernel rather than assumed (no libc call needed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Auxv {
    clock_ticks: u64,
    page_size: u64,
}

impl Default for Auxv {
    /// Linux's fixed USER_HZ, and the most common page size.
    fn default() -> Self {
        Self { clock_ticks: 100, page_size: 4096 }
    }
}

impl Auxv {
    const AT_PAGESZ: u64 = 6;
    const AT_CLKTCK: u64 = 17;

    /// `auxv` is (type, value) pairs of native words, ended by type 0.
    fn parse(bytes: &[u8]) -> Self {
        const WORD: usize = std::mem::size_of::<usize>();
        let mut out = Self::default();
        let word = |c: &[u8]| {
            let mut b = [0u8; WORD];
            b.copy_from_slice(c);
            usize::from_ne_bytes(b) as u64
        };
        for pair in bytes.chunks_exact(2 * WORD) {
            let (key, value) = (word(&pair[..WORD]), word(&pair[WORD..]));
            match key {
                0 => break,
                Self::AT_CLKTCK if value > 0 => out.clock_ticks = value,
                Self::AT_PAGESZ if value > 0 => out.page_size = value,
                _ => {}
            }
        }
        out
    }
}

/// The fields of `/proc/self/stat` this collector reads, in the kernel's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    utime: u64,
    stime: u64,
    threads: u64,
    start_ticks: u64,
    vsize: u64,
    rss_pages: u64,
}

impl Stat {
    /// Parses the line. The command name (field 2) is in parentheses and may itself hold spaces and
    /// parentheses, so the fields are counted from after its last `)`.
    fn parse(line: &str) -> Option<Self> {
        let rest = &line[line.rfind(')')? + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // Field n of proc(5) (1-based) is fields[n - 3]: the first one after the name is field 3.
        let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
        Some(Self {
            utime: field(14)?,
            stime: field(15)?,
            threads: field(20)?,
            start_ticks: field(22)?,
            vsize: field(23)?,
            rss_pages: field(24)?,
        })
    }

    #[allow(clippy::cast_precision_loss)] // tick counts stay far below 2^53
    fn reading(self, aux: Auxv, boot: u64, open_fds: Option<u64>, max_fds: Option<u64>) -> Reading {
        let ticks = aux.clock_ticks as f64;
        Reading {
            cpu_seconds: (self.utime + self.stime) as f64 / ticks,
            resident_bytes: self.rss_pages.saturating_mul(aux.page_size),
            virtual_bytes: self.vsize,
            threads: self.threads,
            start_time_seconds: boot as f64 + self.start_ticks as f64 / ticks,
            open_fds,
            max_fds,
        }
    }
}

/// The boot time (`btime`, seconds since the epoch) from `/proc/stat`: a process's start time
/// there is counted in ticks since boot.
fn boot_time(proc_stat: &str) -> Option<u64> {
    proc_stat.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse().ok())
}

/// The soft limit of "Max open files" in `/proc/self/limits`; `None` when unlimited.
fn max_open_files(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..].split_whitespace().next()?.parse().ok()
}

fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> std::fmt::Result {
    let g = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
    g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)
}

impl Collector for ProcessMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let Some(r) = Reading::now() else { return Ok(()) };
        let cpu = ConstCounter::new(r.cpu_seconds);
        // A counter's name is given without `_total`: the encoder appends it.
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?)?;
        gauge(
            &mut encoder,
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            r.resident_bytes,
        )?;
        gauge(&mut encoder, "process_virtual_memory_bytes", "Virtual memory size in bytes", r.virtual_bytes)?;
        let start = ConstGauge::new(r.start_time_seconds);
        start.encode(encoder.encode_descriptor(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch in seconds",
            None,
            start.metric_type(),
        )?)?;
        gauge(&mut encoder, "process_threads", "Number of OS threads in the process", r.threads)?;
        if let Some(n) = r.open_fds {
            gauge(&mut encoder, "process_open_fds", "Number of open file descriptors", n)?;
        }
        if let Some(n) = r.max_fds {
            gauge(&mut encoder, "process_max_fds", "Maximum number of open file descriptors", n)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A real line, its command name made awkward on purpose: spaces and a ')' inside.
    const STAT: &str = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 1500 0 0 0 \
        250 75 0 0 20 0 9 0 123456 104857600 3000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let s = Stat::parse(STAT).unwrap();
        assert_eq!(
            s,
            Stat {
                utime: 250,
                stime: 75,
                threads: 9,
                start_ticks: 123_456,
                vsize: 104_857_600,
                rss_pages: 3000
            }
        );
        assert_eq!(Stat::parse("4242 (cut short) S 1 2"), None);
        assert_eq!(Stat::parse("no parenthesis at all"), None);
    }

    #[test]
    fn ticks_and_pages_become_seconds_and_bytes() {
        let aux = Auxv { clock_ticks: 100, page_size: 4096 };
        let r = Stat::parse(STAT).unwrap().reading(aux, 1_700_000_000, Some(12), Some(1024));
        assert!((r.cpu_seconds - 3.25).abs() < 1e-9, "{r:?}");
        assert_eq!(r.resident_bytes, 3000 * 4096);
        assert_eq!(r.virtual_bytes, 104_857_600);
        assert!((r.start_time_seconds - 1_700_001_234.56).abs() < 1e-6, "{r:?}");
        assert_eq!((r.threads, r.open_fds, r.max_fds), (9, Some(12), Some(1024)));
    }

    #[test]
    fn auxv_gives_the_clock_tick_and_page_size() {
        let words = |pairs: &[(usize, usize)]| -> Vec<u8> {
            pairs.iter().flat_map(|&(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()]).flatten().collect()
        };
        let aux = Auxv::parse(&words(&[(33, 7), (6, 16384), (17, 250), (0, 0), (17, 1)]));
        assert_eq!(aux, Auxv { clock_ticks: 250, page_size: 16384 });
        assert_eq!(Auxv::parse(&[]), Auxv::default());
        assert_eq!(Auxv::parse(&words(&[(17, 0)])), Auxv::default(), "a zero is no answer");
    }

    #[test]
    fn limits_and_boot_time() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(max_open_files(limits), Some(1024));
        assert_eq!(max_open_files(&limits.replace("1024 ", "unlimited ")), None);
        assert_eq!(boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), Some(1_700_000_000));
        assert_eq!(boot_time("cpu 1\n"), None);
    }

    #[test]
    fn a_procfs_is_read_from_its_files() {
        let root = std::env::temp_dir().join(format!("cc-procfs-{}", std::process::id()));
        let me = root.join("self");
        std::fs::create_dir_all(me.join("fd")).unwrap();
        for fd in ["0", "1", "2", "7"] {
            std::fs::write(me.join("fd").join(fd), "").unwrap();
        }
        std::fs::write(me.join("stat"), STAT).unwrap();
        std::fs::write(
            me.join("limits"),
            "Max open files            4096                 4096                 files\n",
        )
        .unwrap();
        std::fs::write(root.join("stat"), "cpu 1 2\nbtime 1700000000\n").unwrap();
        // No auxv: Linux's USER_HZ and a 4 KiB page.
        let r = Reading::from_proc(&root).unwrap();
        assert_eq!((r.resident_bytes, r.open_fds, r.max_fds), (3000 * 4096, Some(4), Some(4096)));
        std::fs::remove_file(me.join("stat")).unwrap();
        assert_eq!(Reading::from_proc(&root), None, "no stat, no reading");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_and_scraped() {
        let before = Reading::now().expect("/proc/self is readable on Linux");
        assert!(before.resident_bytes > 0 && before.virtual_bytes >= before.resident_bytes, "{before:?}");
        assert!(before.threads >= 1 && before.open_fds.is_some_and(|n| n >= 3), "{before:?}");
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        assert!(before.start_time_seconds <= now + 1.0 && before.start_time_seconds > now - 86_400.0 * 365.0);
        // Burn some CPU: the counter never goes back.
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let after = Reading::now().unwrap();
        assert!(after.cpu_seconds >= before.cpu_seconds, "{before:?} then {after:?}");

        let mut registry = Registry::default();
        ProcessMetrics::register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for name in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
            "process_start_time_seconds",
            "process_threads",
            "process_open_fds",
        ] {
            assert!(text.lines().any(|l| l.starts_with(&format!("{name} "))), "no {name} in\n{text}");
        }
        assert!(text.contains("# TYPE process_cpu_seconds counter"), "{text}");
    }
}
