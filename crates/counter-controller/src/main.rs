//! The `counter-controller` binary: parses flags, sets up logging, runs; errors end as one line.

use clap::Parser;
use counter_controller::cli::{self, Cli};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Cli::parse();
    cli::init_logging(args.log_format());
    match args.execute().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("counter-controller: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
