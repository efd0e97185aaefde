//! `cairnq web [--bind ADDR] [--token T] [--read-only] [--metrics-addr ADDR]`: serves the
//! dashboard (cairnq-web) on this database until Ctrl-C or SIGTERM.
//!
//! The safety rules are the dashboard's own (loopback by default, a token
//! before any other address, actions refused in read-only mode); this
//! command only maps their refusals to exit code 2 and says where to look.

use std::net::SocketAddr;

use cairnq_core::QueueGauges;
use cairnq_web::{WebError, WebOptions};

use crate::commands::Context;
use crate::exit::{Exit, Failure};

#[derive(Debug, clap::Args)]
#[command(after_help = "-o does not apply: the dashboard serves its pages and JSON API over HTTP; the command \
                        prints only where it listens, on stderr.")]
pub(crate) struct Args {
    /// The address to listen on: IP:PORT or localhost:PORT. Anything but
    /// loopback needs --token (and is warned about: the dashboard speaks
    /// plain HTTP).
    #[arg(long, default_value_t = cairnq_web::DEFAULT_BIND, value_parser = cairnq_web::parse_bind)]
    bind: SocketAddr,
    /// The access token (bearer header or login), required off loopback;
    /// at least 16 characters (e.g. `openssl rand -hex 16`).
    #[arg(long, env = cairnq_web::TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
    /// Show everything, change nothing: every action is hidden and refused.
    #[arg(long)]
    read_only: bool,
    /// Also serve Prometheus metrics (queue depths, read every 10 s) at
    /// http://ADDR/metrics, on a listener of their own.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
}

pub(crate) async fn run(context: &Context, args: Args) -> Result<Exit, Failure> {
    let client = context.existing().await?;
    let _gauges = match args.metrics_addr {
        Some(addr) => {
            crate::metrics::serve(addr).await?;
            Some(QueueGauges::new(client.clone()).spawn())
        }
        None => None,
    };
    let mut options = WebOptions::new().bind(args.bind);
    if let Some(token) = args.token {
        options = options.token(token);
    }
    if args.read_only {
        options = options.read_only();
    }
    // Listen for SIGTERM before saying where the dashboard is: a launcher
    // that stops it right after reading the address gets a clean end.
    let stop = stopped();
    let server = cairnq_web::bind(client, options).await.map_err(web_failure)?;
    eprintln!("cairnq: the dashboard is at http://{}/ (Ctrl-C stops it)", server.local_addr());
    if let Some(warning) = server.exposure_warning() {
        eprintln!("cairnq: {warning}");
    }
    server.run_until(stop).await.map_err(web_failure)?;
    Ok(Exit::Ok)
}

/// Ctrl-C or SIGTERM, whichever comes first; both are caught from the
/// moment this is called (not first polled).
fn stopped() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let interrupt = signal(SignalKind::interrupt());
    let terminate = signal(SignalKind::terminate());
    async move {
        match (interrupt, terminate) {
            (Ok(mut interrupt), Ok(mut terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            // No handler could be installed: the default action ends the process.
            _ => std::future::pending().await,
        }
    }
}

fn web_failure(error: WebError) -> Failure {
    match error {
        WebError::TokenRequired(_) | WebError::BadToken | WebError::WeakToken { .. } => {
            Failure::usage(error.to_string())
        }
        other => Failure::new(Exit::Failed, other.to_string()),
    }
}
