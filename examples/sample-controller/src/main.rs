//! The `sample-controller` binary: parses flags, sets up logging, runs; errors end as one line.

use clap::Parser;
use kube_manager::logging::init_logging;
use sample_controller::cli::Cli;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Cli::parse();
    init_logging(args.log_format());
    match args.execute().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sample-controller: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
