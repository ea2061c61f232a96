//! Logs: one line per event on stderr, readable on a terminal, JSON for machines.
//!
//! The filter comes from `RUST_LOG` (default `info`). Colour only when stderr is a terminal and
//! `NO_COLOR` is unset, so files and pipes get plain text.

use std::io::IsTerminal;

use clap::ValueEnum;

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One readable line per event.
    Human,
    /// One JSON object per line.
    Json,
}

/// Sets up `tracing` output in `format`. A second call changes nothing (the first subscriber
/// stays), so tests may call it freely.
///
/// ```
/// kube_manager::logging::init_logging(kube_manager::logging::LogFormat::Json);
/// tracing::info!(key = "default/web", "reconciled");
/// ```
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(colour);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
