//! The sandbox's flags, one definition for `kube-sandbox` and every controller's `sandbox`
//! command. A binary may give its own defaults with clap's `mut_arg` (`listen`,
//! `kubeconfig_out`, `pod_ready`, …).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kube_sandbox::{Controllers, Simulation};
use kube_sandbox::{HostExec, Rollout, Sandbox, SandboxConfig};

/// Where the sandbox listens, where its kubeconfig goes, and the cluster it simulates.
#[derive(Debug, Args, Clone)]
pub struct ServerArgs {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// Allow listening on a non-loopback address (anyone who can reach it and has the token can
    /// use the sandbox: TLS with its own CA, one bearer token, no authorization unless
    /// `--authorization-mode RBAC`).
    #[arg(long)]
    pub allow_remote: bool,
    /// Where to write the kubeconfig (mode 0600).
    #[arg(long, default_value = "./sandbox.kubeconfig", value_name = "PATH")]
    pub kubeconfig_out: PathBuf,
    /// Time for one simulated pod to become ready.
    #[arg(long, default_value = "300ms", value_parser = parse_duration, value_name = "DURATION")]
    pub pod_ready: Duration,
    /// How long a container that runs its image's entrypoint, in a simulated pod that does not
    /// restart (`restartPolicy: Never` or `OnFailure`, a Job's), runs before it exits 0. A
    /// command the built-in shell runs (`sh -c …`, `sleep 30`, `echo hi`) runs as long as it
    /// takes, and exits with its own code.
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub pod_run_time: Duration,
    /// Nodes of the simulated cluster (each with a kubelet that runs the pods bound to it).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub nodes: usize,
    /// The simulated components that run, in kube-controller-manager's `--controllers` syntax:
    /// `*` for all, `name` to add one, `-name` to leave one out (`*,-scheduler`).
    #[arg(long, default_value = "*", value_name = "LIST")]
    pub controllers: Controllers,
    /// An image the simulated registry does not have, as a container's `image` writes it (`*`
    /// matches any run of characters: `*:non-existent`): its containers never start, waiting in
    /// `ErrImagePull` then `ImagePullBackOff` until the pod's image changes. Repeat for more.
    #[arg(long = "missing-image", value_name = "PATTERN")]
    pub missing_images: Vec<String>,
    /// A bare API server: no nodes, no scheduler, no kubelets, no controllers (Deployments get
    /// a simulated status only).
    #[arg(long)]
    pub no_simulation: bool,
    /// Run `kubectl exec` commands as processes on this machine, each container's in a working
    /// directory of its own under DIR (`DIR/<namespace>/<pod>/<container>`), as the sandbox's
    /// user: anyone who may exec may run anything here. Off: the built-in shell answers.
    #[arg(long, value_name = "DIR")]
    pub exec_on_host: Option<PathBuf>,
    /// How requests are authorized, as kube-apiserver's flag names it: `AlwaysAllow` (every
    /// request with the token), or `RBAC` (Roles and bindings enforced, the bootstrap roles
    /// written; the kubeconfig's token is `system:masters`, and a test asks for others with
    /// TokenRequests or impersonation).
    #[arg(long, default_value = "AlwaysAllow", value_name = "MODE")]
    pub authorization_mode: kube_sandbox::Authorization,
    /// Forward a pod's port to a local address: `kubectl port-forward` to it connects there
    /// (`default/web:80=127.0.0.1:8080`; repeat for more).
    #[arg(long = "forward-port", value_parser = parse_forward, value_name = "NS/POD:PORT=ADDR")]
    pub forward_ports: Vec<PortForward>,
    /// Where a Service an admission webhook or a CRD's conversion webhook names listens: it is called
    /// there, its certificate checked for `NAME.NS.svc` (`webhooks/guard=127.0.0.1:9443`;
    /// repeat for more). A webhook given by `url` needs none.
    #[arg(long = "webhook-service", value_parser = parse_webhook_service, value_name = "NS/NAME=ADDR")]
    pub webhook_services: Vec<WebhookService>,
}

/// A Service webhooks name and the local address it is served at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookService {
    /// The Service's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Where its webhooks are called.
    pub at: SocketAddr,
}

/// `NS/NAME=ADDR`.
fn parse_webhook_service(s: &str) -> Result<WebhookService, String> {
    let bad = |why: &str| format!("{s:?} is not NS/NAME=HOST:PORT ({why})");
    let (service, at) = s.split_once('=').ok_or_else(|| bad("no '='"))?;
    let (namespace, name) =
        service.split_once('/').ok_or_else(|| bad("no '/' between namespace and name"))?;
    if namespace.is_empty() || name.is_empty() {
        return Err(bad("an empty namespace or name"));
    }
    let at = at.parse().map_err(|_| bad("the address is not HOST:PORT with an IP"))?;
    Ok(WebhookService { namespace: namespace.to_owned(), name: name.to_owned(), at })
}

/// A pod's port and the local address it is forwarded to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortForward {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// Its port.
    pub port: u16,
    /// Where connections to it go.
    pub to: SocketAddr,
}

/// `NS/POD:PORT=ADDR`.
fn parse_forward(s: &str) -> Result<PortForward, String> {
    let bad = |why: &str| format!("{s:?} is not NS/POD:PORT=HOST:PORT ({why})");
    let (from, to) = s.split_once('=').ok_or_else(|| bad("no '='"))?;
    let (pod, port) = from.rsplit_once(':').ok_or_else(|| bad("no ':' before the pod's port"))?;
    let (namespace, pod) = pod.split_once('/').ok_or_else(|| bad("no '/' between namespace and pod"))?;
    if namespace.is_empty() || pod.is_empty() {
        return Err(bad("an empty namespace or pod"));
    }
    let port =
        port.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| bad("the pod's port is not 1-65535"))?;
    let to = to.parse().map_err(|_| bad("the address is not HOST:PORT with an IP"))?;
    Ok(PortForward { namespace: namespace.to_owned(), pod: pod.to_owned(), port, to })
}

impl ServerArgs {
    /// The sandbox these flags describe, not yet served.
    #[must_use]
    pub fn sandbox(&self) -> Sandbox {
        let simulation = (!self.no_simulation).then(|| Simulation {
            nodes: self.nodes,
            controllers: self.controllers.clone(),
            run_to_completion: self.pod_run_time,
            missing_images: self.missing_images.clone(),
            ..Simulation::default()
        });
        let mut config = SandboxConfig {
            rollout: Rollout::Paced(self.pod_ready),
            simulation,
            authorization: self.authorization_mode,
            ..SandboxConfig::default()
        };
        for w in &self.webhook_services {
            config.store.webhook_services.insert((w.namespace.clone(), w.name.clone()), w.at);
        }
        if let Some(dir) = &self.exec_on_host {
            config.container_runtime = std::sync::Arc::new(HostExec::new(dir));
        }
        let sandbox = Sandbox::with_config(config);
        for f in &self.forward_ports {
            sandbox.forward_port(&f.namespace, &f.pod, f.port, f.to);
        }
        sandbox
    }
}

/// A duration as Go and kubectl write it (`300ms`, `1s`, `1m30s`) or in ISO 8601 (`PT1S`).
fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration (use e.g. 300ms, 1s, 1m30s)");
    let d: jiff::SignedDuration = s.trim().parse().map_err(|_| bad())?;
    Duration::try_from(d).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_ports_name_the_pod_its_port_and_the_address() {
        let f = parse_forward("default/web:80=127.0.0.1:8080").unwrap();
        assert_eq!(
            f,
            PortForward {
                namespace: "default".into(),
                pod: "web".into(),
                port: 80,
                to: "127.0.0.1:8080".parse().unwrap()
            }
        );
        for bad in [
            "web:80=127.0.0.1:8080",
            "default/web=127.0.0.1:8080",
            "default/web:0=127.0.0.1:1",
            "default/web:80=localhost",
        ] {
            let e = parse_forward(bad).unwrap_err();
            assert!(e.starts_with(&format!("{bad:?} is not NS/POD:PORT=HOST:PORT (")), "{e}");
        }
    }

    #[test]
    fn webhook_services_name_the_service_and_the_address() {
        let w = parse_webhook_service("webhooks/guard=127.0.0.1:9443").unwrap();
        assert_eq!((w.namespace.as_str(), w.name.as_str()), ("webhooks", "guard"));
        assert_eq!(w.at, "127.0.0.1:9443".parse().unwrap());
        for bad in ["webhooks/guard", "guard=127.0.0.1:1", "/guard=127.0.0.1:1", "webhooks/guard=localhost"] {
            let e = parse_webhook_service(bad).unwrap_err();
            assert!(e.starts_with(&format!("{bad:?} is not NS/NAME=HOST:PORT (")), "{e}");
        }
    }

    #[test]
    fn durations_as_kubectl_writes_them() {
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        for bad in ["", "fast", "-1s", "10"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }
}
