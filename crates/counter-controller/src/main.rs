//! The `counter-controller` binary: parses flags, sets up logging, runs; errors end as one line.

use clap::Parser;
use counter_controller::cli::Cli;

// The embedded API server builds and frees a parsed object for every write and every read of
// one not written lately; glibc's allocator spent a third of its time there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Cli::parse();
    manager::logging::init_logging(args.log_format());
    match args.execute().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("counter-controller: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
