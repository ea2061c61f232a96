//! The baselines' writer: the Deployment writes of the raw and oracle baselines, from a process of
//! its own — this bench's executable again, started with [`ENV`] set — as the controller's come
//! from its own. The bench tells it what to do over its stdin, one command a line:
//!
//! * `create`, `scale`, `delete`: that phase's N writes, back to back, `workers` at a time;
//! * `scale-each`, `delete-each`: the same writes, each issued as its index arrives on a line of
//!   its own, `workers` at a time, until a line `end`;
//! * `list`, `stream`: a bare list of the ConfigMaps, paginated (500 a page, as a watcher's) or
//!   streamed (`sendInitialEvents`), each page or event decoded and dropped (the scale bench's
//!   yardstick for how fast the API server hands out its objects).
//!
//! With [`ENV`] set to `N,workers,scale` (the scale bench), the writer reads the ConfigMaps of
//! every namespace and writes only for the annotated ones, each in its own namespace.
//!
//! It answers `ready` once it has listed the ConfigMaps it builds Deployments from, and `done`
//! when a phase's writes have all been acknowledged; it exits at the end of its stdin.

use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;

use crate::process::{cpu_seconds, each, name};

/// Set (to `N,workers`) in the writer process's environment.
pub const ENV: &str = "CONVERGENCE_WRITER";

/// The writer process, from the bench's side.
pub struct Writer {
    child: Child,
    stdin: Arc<Mutex<ChildStdin>>,
    stdout: Arc<Mutex<BufReader<ChildStdout>>>,
}

impl Writer {
    /// Starts a writer against the server in `kubeconfig`; returns once it is ready.
    pub async fn spawn(kubeconfig: &Path, n: usize, workers: usize) -> Self {
        Self::spawn_with(kubeconfig, &format!("{n},{workers}")).await
    }

    /// As [`spawn`](Self::spawn), for the scale bench: writes for the annotated ConfigMaps of
    /// every namespace.
    pub async fn spawn_scale(kubeconfig: &Path, workers: usize) -> Self {
        Self::spawn_with(kubeconfig, &format!("0,{workers},scale")).await
    }

    async fn spawn_with(kubeconfig: &Path, spec: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(ENV, spec)
            .env("KUBECONFIG", kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = Arc::new(Mutex::new(child.stdin.take().unwrap()));
        let stdout = Arc::new(Mutex::new(BufReader::new(child.stdout.take().unwrap())));
        let writer = Self { child, stdin, stdout };
        writer.expect("ready").await;
        writer
    }

    /// CPU seconds of the writer process so far.
    pub fn cpu(&self) -> f64 {
        cpu_seconds(&self.child.id().to_string())
    }

    fn send(&self, line: &str) {
        send(&self.stdin, line);
    }

    async fn expect(&self, want: &'static str) {
        let stdout = Arc::clone(&self.stdout);
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            stdout.lock().read_line(&mut line).unwrap();
            line
        })
        .await
        .unwrap();
        assert_eq!(line.trim_end(), want, "the writer process answered {line:?}");
    }

    /// Runs `phase`'s N writes; no lag (nothing triggers them but the start).
    pub async fn run(&self, phase: &str) -> Duration {
        self.send(phase);
        self.expect("done").await;
        Duration::ZERO
    }

    /// Runs `user`, which calls `done(i)` as each of its changes is acknowledged, and has the
    /// writer issue `phase`'s write for `i` then; the time from the user's end to the writes' end.
    pub async fn each<U: Future<Output = ()>>(
        &self,
        phase: &str,
        user: impl FnOnce(Box<dyn Fn(usize)>) -> U,
    ) -> Duration {
        self.send(&format!("{phase}-each"));
        let stdin = Arc::clone(&self.stdin);
        user(Box::new(move |i| send(&stdin, &i.to_string()))).await;
        let user_done = Instant::now();
        self.send("end");
        self.expect("done").await;
        user_done.elapsed()
    }

    /// Ends the writer's input and waits for it to exit.
    pub async fn finish(self) {
        let Self { mut child, stdin, .. } = self;
        drop(stdin);
        tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    }
}

fn send(stdin: &Mutex<ChildStdin>, line: &str) {
    stdin.lock().write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// One of the writes the controller makes, for ConfigMap `i`.
#[derive(Clone, Copy)]
enum Op {
    Create,
    Scale,
    Delete,
}

impl Op {
    async fn issue(self, deploys: &Api<Deployment>, cms: &[ConfigMap], i: usize) {
        match self {
            Self::Create => {
                let d = counter_controller::controller::new_deployment(&cms[i], 3);
                // In the ConfigMap's namespace (the scale bench spreads them over many).
                let ns = cms[i].metadata.namespace.as_deref().unwrap_or("default");
                let deploys: Api<Deployment> = Api::namespaced(deploys.clone().into_client(), ns);
                deploys.create(&PostParams::default(), &d).await.unwrap();
            }
            Self::Scale => {
                let p = json!({ "spec": { "replicas": 5 } });
                deploys.patch(&name(i), &PatchParams::default(), &Patch::Merge(&p)).await.unwrap();
            }
            Self::Delete => {
                deploys.delete(&name(i), &DeleteParams::background()).await.unwrap();
            }
        }
    }
}

/// The writer process: `spec` is [`ENV`]'s value.
pub fn main(spec: &str) {
    let mut parts = spec.split(',');
    let (n, workers, scale) = (parts.next(), parts.next(), parts.next() == Some("scale"));
    let (n, workers) = n
        .zip(workers)
        .and_then(|(n, w)| Some((n.parse::<usize>().ok()?, w.parse::<usize>().ok()?)))
        .unwrap_or_else(|| panic!("{ENV}={spec:?}: expected N,workers[,scale]"));
    // Commands are read on a thread of their own, so a blocked read never holds a runtime thread.
    let (tx, mut commands) = futures::channel::mpsc::unbounded::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.unbounded_send(line).is_err() {
                break;
            }
        }
    });
    // The runtime the controller binary runs on (`#[tokio::main]`: a thread per core).
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let kubeconfig = std::env::var("KUBECONFIG").unwrap();
        let client = kube_manager::client::client(counter_controller::AGENT, Some(Path::new(&kubeconfig)))
            .await
            .unwrap();
        let cms = if scale {
            annotated_configmaps(&client).await
        } else {
            Api::<ConfigMap>::default_namespaced(client.clone())
                .list(&Default::default())
                .await
                .unwrap()
                .items
        };
        let n = if scale { cms.len() } else { n };
        let all_cms: Api<ConfigMap> =
            if scale { Api::all(client.clone()) } else { Api::default_namespaced(client.clone()) };
        let deploys: Api<Deployment> = Api::default_namespaced(client);
        let (deploys, cms) = (&deploys, &cms[..]);
        println!("ready");
        while let Some(command) = commands.next().await {
            let (phase, triggered) = match command.split_once('-') {
                Some((phase, "each")) => (phase, true),
                _ => (command.as_str(), false),
            };
            let write = match phase {
                "list" | "stream" => {
                    bare_list(&all_cms, phase == "stream").await;
                    println!("done");
                    continue;
                }
                "create" => Op::Create,
                "scale" => Op::Scale,
                "delete" => Op::Delete,
                other => panic!("the writer has no command {other:?}"),
            };
            if triggered {
                let indices = (&mut commands)
                    .take_while(|line| futures::future::ready(line != "end"))
                    .map(|line| line.parse::<usize>().unwrap());
                indices.for_each_concurrent(workers, |i| write.issue(deploys, cms, i)).await;
            } else {
                each(n, workers, |i| write.issue(deploys, cms, i)).await;
            }
            println!("done");
        }
    });
}

/// The annotated ConfigMaps of every namespace, read by pages of metadata (their data is not
/// needed to build a Deployment).
async fn annotated_configmaps(client: &kube::Client) -> Vec<ConfigMap> {
    let api: Api<ConfigMap> = Api::all(client.clone());
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = kube::api::ListParams::default().limit(500);
        lp.continue_token = token.take();
        let page = api.list_metadata(&lp).await.unwrap();
        for m in page.items {
            if m.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(crate::process::ANNOTATION)) {
                out.push(ConfigMap { metadata: m.metadata, ..ConfigMap::default() });
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(next) => token = Some(next),
            None => return out,
        }
    }
}

/// Every ConfigMap `api` sees, by pages of 500 or by a streaming list, each decoded and dropped.
async fn bare_list(api: &Api<ConfigMap>, stream: bool) {
    if stream {
        let params = kube::api::WatchParams { send_initial_events: true, ..Default::default() };
        let mut events = api.watch(&params, "0").await.unwrap().boxed();
        while let Some(e) = events.next().await {
            if let kube::api::WatchEvent::Bookmark(b) = e.unwrap()
                && b.metadata.annotations.contains_key("k8s.io/initial-events-end")
            {
                return;
            }
        }
        panic!("the streaming list ended before its end bookmark");
    }
    let mut token: Option<String> = None;
    loop {
        let mut lp = kube::api::ListParams::default().limit(500);
        lp.continue_token = token.take();
        let page = api.list(&lp).await.unwrap();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(next) => token = Some(next),
            None => return,
        }
    }
}
