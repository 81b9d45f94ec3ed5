//! `ceiling k8s`: a plan rendered as Kubernetes manifests, a Dockerfile per stack and a run script
//! (`crates/k8s`). Renders only: nothing here talks to a cluster.

use anyhow::Context;
use ceiling_k8s::{render, Options, StackInput};
use ceiling_lab::repo_root;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `ceiling k8s`.
#[derive(Args, Debug)]
#[command(after_help = "Example:
  ceiling k8s plans/000-status-mixed.toml --out k8s/000 --agents 2 --registry registry.local:5000
  (then build and push the images from docker/*/Dockerfile and follow k8s/000/run.sh)")]
pub struct K8sArgs {
    /// Plan file (TOML).
    pub plan: PathBuf,
    /// Directory to write the manifests, Dockerfiles and run.sh into.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Stacks to render (default: the plan's).
    #[arg(long, value_delimiter = ',')]
    pub stacks: Vec<String>,
    /// Generator agents per stack (an Indexed Job).
    #[arg(long, default_value_t = 2)]
    pub agents: u32,
    /// CPU cores of each agent and of the coordinator (requests = limits).
    #[arg(long, default_value_t = 1.0)]
    pub agent_cpus: f64,
    /// Memory of each agent and of the coordinator, MiB.
    #[arg(long, default_value_t = 1024)]
    pub agent_memory_mb: u64,
    /// Memory of PostgreSQL, MiB (its CPU follows the plan's stand.postgres_cpus; unlimited if unset).
    #[arg(long, default_value_t = 4096)]
    pub postgres_memory_mb: u64,
    /// Image registry prefix for the stacks' and ceiling's images.
    #[arg(long, default_value = "")]
    pub registry: String,
    /// Image tag.
    #[arg(long, default_value = "latest")]
    pub tag: String,
    /// Namespace (default: ceiling-<plan name>).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Pass --quick to the coordinator's `ceiling run` (scaled durations).
    #[arg(long)]
    pub quick: bool,
}

/// 32 hex characters from the OS's random source.
fn secret() -> String {
    use rand::RngCore;
    let mut b = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A valid Kubernetes namespace name (RFC 1123 label): lowercase letters, digits and `-`, at most
/// 63 characters, starting and ending with an alphanumeric.
fn dns_label(s: &str) -> String {
    let mut l: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(63)
        .collect();
    while l.ends_with('-') {
        l.pop();
    }
    l
}

/// Runs `ceiling k8s`.
pub fn run(a: K8sArgs) -> anyhow::Result<ExitCode> {
    let root = repo_root()?;
    let plan = ceiling_plan::load_plan(&a.plan)?;
    let plan_toml = std::fs::read_to_string(&a.plan)
        .with_context(|| format!("reading {}", a.plan.display()))?;
    let names = if a.stacks.is_empty() {
        plan.target.stacks.clone()
    } else {
        a.stacks.clone()
    };
    if names.is_empty() {
        anyhow::bail!("no stacks: the plan's [target] stacks is empty and --stacks was not given");
    }
    let st = &plan.stand;
    let mut stacks = Vec::new();
    for n in &names {
        let s = ceiling_stand::StackSpec::load(&root.join("stacks"), n)?;
        stacks.push(StackInput {
            name: s.name.clone(),
            requires: s
                .build
                .as_ref()
                .map(|b| b.requires.clone())
                .unwrap_or_default(),
            build_command: s.build.as_ref().map(|b| b.command.clone()),
            build_inputs: s
                .build
                .as_ref()
                .map(|b| b.inputs.clone())
                .unwrap_or_default(),
            run_command: s.run.command.clone(),
            run_env: s.run.env.clone(),
            health: s.run.health.clone(),
            startup_timeout_s: s.run.startup_timeout_s,
            pool_size: st.pool_size.unwrap_or(s.settings.pool_size),
            workers: st.workers.unwrap_or(s.settings.workers),
            cpus: st.cpus.or(s.limits.cpus).unwrap_or(0.0),
            memory_mb: st.memory_mb.or(s.limits.memory_mb).unwrap_or(0),
        });
    }
    let scale = if a.quick { plan.quick_scale } else { 1.0 };
    // every repetition of a closed model is a pass over the levels: the run is that long
    let length = plan.run_duration().as_secs_f64() * scale;
    let o = Options {
        namespace: a
            .namespace
            .clone()
            .unwrap_or_else(|| dns_label(&format!("ceiling-{}", plan.name))),
        plan_name: plan.name.clone(),
        plan_toml,
        registry: a.registry.clone(),
        tag: a.tag.clone(),
        agents: a.agents,
        agent_cpus: a.agent_cpus,
        agent_memory_mb: a.agent_memory_mb,
        postgres_image: format!("postgres:{}", st.postgres_version.unwrap_or(15)),
        postgres_settings: st.postgres_settings.clone(),
        postgres_cpus: st.postgres_cpus,
        postgres_memory_mb: a.postgres_memory_mb,
        seed: st.seed,
        stand_env: st.env.clone(),
        schema_sql: std::fs::read_to_string(root.join("contract/schema.sql"))?,
        seed_sql: std::fs::read_to_string(root.join("contract/seed.sql"))?,
        token: secret(),
        db_password: secret(),
        load_args: if a.quick {
            vec!["--quick".into()]
        } else {
            vec![]
        },
        // the run's planned length, plus start-up and a margin
        run_deadline_s: (length + 600.0).ceil() as i64,
    };
    let files = render(&o, &stacks)?;
    for f in &files {
        let p = a.out.join(&f.path);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        std::fs::write(&p, &f.text).with_context(|| format!("writing {}", p.display()))?;
    }
    println!(
        "wrote {} files to {} for {} stack(s), {} agent(s) each (namespace {}); rendered only — not applied to any cluster",
        files.len(),
        a.out.display(),
        stacks.len(),
        a.agents,
        o.namespace
    );
    println!("note: the Secret in 00-base.yaml holds a freshly generated agent token and database password");
    Ok(ExitCode::SUCCESS)
}
