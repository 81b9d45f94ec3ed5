//! The rendered manifests decode strictly into the Kubernetes API types (every field known: an
//! unknown or misplaced one fails), and say what they must: requests = limits from the plan,
//! the three roles kept apart, an Indexed Job of N agents the coordinator addresses.

use ceiling_k8s::{render, File, Options, StackInput, AGENTS_SERVICE, ROLE_LABEL};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PodSpec, Secret, Service};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

fn options() -> Options {
    Options {
        namespace: "ceiling-000".into(),
        plan_name: "000-status-mixed".into(),
        plan_toml: "name = \"x\"\n".into(),
        registry: "registry.local:5000".into(),
        tag: "dev".into(),
        agents: 3,
        agent_cpus: 1.0,
        agent_memory_mb: 512,
        postgres_image: "postgres:15".into(),
        postgres_settings: BTreeMap::from([
            ("max_connections".to_string(), "500".to_string()),
            ("shared_buffers".to_string(), "1GB".to_string()),
        ]),
        postgres_cpus: Some(2.0),
        postgres_memory_mb: 4096,
        seed: 7,
        stand_env: BTreeMap::from([("JAVA_TOOL_OPTIONS".to_string(), "-Xmx256m".to_string())]),
        schema_sql: "create table status (id uuid);".into(),
        seed_sql: "select 1;".into(),
        token: "0123456789abcdef0123".into(),
        db_password: "pw-0123456789".into(),
        load_args: vec!["--quick".into()],
        run_deadline_s: 3600,
    }
}

fn stacks() -> Vec<StackInput> {
    vec![
        StackInput {
            name: "go-pgx".into(),
            requires: vec!["go".into()],
            build_command: Some(vec![
                "go".into(),
                "build".into(),
                "-o".into(),
                "target/server".into(),
                ".".into(),
            ]),
            build_inputs: vec![],
            run_command: vec!["./target/server".into()],
            run_env: BTreeMap::from([("GOMAXPROCS".to_string(), "2".to_string())]),
            health: "/health".into(),
            startup_timeout_s: 60,
            pool_size: 64,
            workers: 2,
            cpus: 2.0,
            memory_mb: 1024,
        },
        StackInput {
            name: "spring-mvc-jdbi".into(),
            requires: vec!["mvn".into(), "java".into()],
            build_command: Some(vec!["mvn".into(), "package".into()]),
            build_inputs: vec!["../spring-common".into()],
            run_command: vec![
                "bash".into(),
                "../spring-common/java21.sh".into(),
                "-jar".into(),
                "target/app.jar".into(),
            ],
            run_env: BTreeMap::new(),
            health: "/health".into(),
            startup_timeout_s: 120,
            pool_size: 50,
            workers: 2,
            cpus: 0.5,
            memory_mb: 768,
        },
    ]
}

/// Decodes `v` into `T`, failing on any field `T` does not have (k8s-openapi itself ignores them).
fn strict<T: DeserializeOwned>(v: &serde_yaml::Value, file: &str) -> T {
    let mut unknown = Vec::new();
    let t: T = serde_ignored::deserialize(v.clone(), |path| unknown.push(path.to_string()))
        .unwrap_or_else(|e| panic!("{file}: does not decode: {e}"));
    assert!(
        unknown.is_empty(),
        "{file}: fields the API does not have: {unknown:?}"
    );
    t
}

struct Decoded {
    deployments: Vec<Deployment>,
    jobs: Vec<Job>,
    statefulsets: Vec<StatefulSet>,
    services: Vec<Service>,
    kinds: Vec<String>,
}

fn decode(files: &[File]) -> Decoded {
    let mut d = Decoded {
        deployments: vec![],
        jobs: vec![],
        statefulsets: vec![],
        services: vec![],
        kinds: vec![],
    };
    for f in files.iter().filter(|f| f.path.ends_with(".yaml")) {
        for doc in serde_yaml::Deserializer::from_str(&f.text) {
            let v = serde_yaml::Value::deserialize(doc).unwrap();
            let kind = v["kind"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: a document without kind", f.path))
                .to_string();
            match kind.as_str() {
                "Namespace" => drop(strict::<Namespace>(&v, &f.path)),
                "Secret" => drop(strict::<Secret>(&v, &f.path)),
                "ConfigMap" => drop(strict::<ConfigMap>(&v, &f.path)),
                "Service" => d.services.push(strict(&v, &f.path)),
                "StatefulSet" => d.statefulsets.push(strict(&v, &f.path)),
                "Deployment" => d.deployments.push(strict(&v, &f.path)),
                "Job" => d.jobs.push(strict(&v, &f.path)),
                k => panic!("{}: unexpected kind {k}", f.path),
            }
            d.kinds.push(kind);
        }
    }
    d
}

use serde::Deserialize as _;

fn pod(spec: &Option<k8s_openapi::api::core::v1::PodTemplateSpec>) -> &PodSpec {
    spec.as_ref().unwrap().spec.as_ref().unwrap()
}

fn role_of(t: &k8s_openapi::api::core::v1::PodTemplateSpec) -> String {
    t.metadata.as_ref().unwrap().labels.as_ref().unwrap()[ROLE_LABEL].clone()
}

/// The roles a pod refuses to share a node with.
fn avoided(p: &PodSpec) -> Vec<String> {
    let terms = p
        .affinity
        .as_ref()
        .unwrap()
        .pod_anti_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap();
    assert!(terms
        .iter()
        .all(|t| t.topology_key == "kubernetes.io/hostname"));
    terms
        .iter()
        .flat_map(|t| {
            t.label_selector
                .as_ref()
                .unwrap()
                .match_expressions
                .clone()
                .unwrap()
        })
        .filter(|e| e.key == ROLE_LABEL && e.operator == "In")
        .flat_map(|e| e.values.unwrap())
        .collect()
}

#[test]
fn manifests_decode_strictly_and_keep_the_stand_s_limits_and_roles_apart() {
    let files = render(&options(), &stacks()).unwrap();
    let d = decode(&files);
    assert_eq!(d.deployments.len(), 2);
    assert_eq!(d.statefulsets.len(), 1);
    assert_eq!(
        d.jobs.len(),
        4,
        "an agents Job and a coordinator Job per stack"
    );
    assert!(d.kinds.contains(&"Namespace".to_string()));

    // requests = limits = the stack's limits
    for (dep, st) in d.deployments.iter().zip(stacks()) {
        let p = pod(&Some(dep.spec.as_ref().unwrap().template.clone())).clone();
        let r = p.containers[0].resources.as_ref().unwrap();
        assert_eq!(r.requests, r.limits, "{}: requests = limits", st.name);
        let lim = r.limits.as_ref().unwrap();
        assert_eq!(lim["cpu"].0, format!("{}m", (st.cpus * 1000.0) as u64));
        assert_eq!(lim["memory"].0, format!("{}Mi", st.memory_mb));
        let env: BTreeMap<_, _> = p.containers[0]
            .env
            .as_ref()
            .unwrap()
            .iter()
            .map(|e| (e.name.clone(), e.value.clone()))
            .collect();
        assert_eq!(env["DB_POOL_SIZE"], Some(st.pool_size.to_string()));
        assert_eq!(env["WORKERS"], Some(st.workers.to_string()));
        assert_eq!(
            env["JAVA_TOOL_OPTIONS"],
            Some("-Xmx256m".into()),
            "the plan's [stand.env]"
        );
        assert!(
            env["DB_PASSWORD"].is_none(),
            "the password comes from the Secret, not the manifest"
        );
    }
    let pg = pod(&Some(
        d.statefulsets[0].spec.as_ref().unwrap().template.clone(),
    ))
    .clone();
    let args = pg.containers[0].args.clone().unwrap();
    assert!(
        args.windows(2).any(|w| w == ["-c", "max_connections=500"]),
        "{args:?}"
    );
    let r = pg.containers[0].resources.as_ref().unwrap();
    assert_eq!(r.limits.as_ref().unwrap()["cpu"].0, "2000m");

    // the three roles never share a node, each pod avoiding the other two
    let mut templates: Vec<_> = d
        .deployments
        .iter()
        .map(|x| x.spec.as_ref().unwrap().template.clone())
        .collect();
    templates.extend(
        d.jobs
            .iter()
            .map(|x| x.spec.as_ref().unwrap().template.clone()),
    );
    templates.extend(
        d.statefulsets
            .iter()
            .map(|x| x.spec.as_ref().unwrap().template.clone()),
    );
    for t in &templates {
        let role = role_of(t);
        let mut av = avoided(t.spec.as_ref().unwrap());
        av.sort();
        let mut want: Vec<String> = ["database", "generator", "stack"]
            .iter()
            .filter(|r| **r != role)
            .map(|r| r.to_string())
            .collect();
        want.sort();
        assert_eq!(av, want, "a {role} pod");
    }

    // agents: an Indexed Job of 3 under the headless Service; the coordinator names all three
    let agents = d
        .jobs
        .iter()
        .find(|j| j.metadata.name.as_deref() == Some("agents-go-pgx"))
        .unwrap();
    let js = agents.spec.as_ref().unwrap();
    assert_eq!(js.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((js.completions, js.parallelism), (Some(3), Some(3)));
    assert_eq!(
        js.template.spec.as_ref().unwrap().subdomain.as_deref(),
        Some(AGENTS_SERVICE)
    );
    let headless = d
        .services
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some(AGENTS_SERVICE))
        .unwrap();
    assert_eq!(
        headless.spec.as_ref().unwrap().cluster_ip.as_deref(),
        Some("None")
    );
    let run = d
        .jobs
        .iter()
        .find(|j| j.metadata.name.as_deref() == Some("run-go-pgx"))
        .unwrap();
    let a = pod(&Some(run.spec.as_ref().unwrap().template.clone())).containers[0]
        .args
        .clone()
        .unwrap();
    let list = &a[a.iter().position(|x| x == "--agents").unwrap() + 1];
    assert_eq!(list.split(',').count(), 3);
    assert!(
        list.starts_with("agents-go-pgx-0.ceiling-agents.ceiling-000.svc:7700"),
        "{list}"
    );
    assert!(a.contains(&"--quick".to_string()));
    // the coordinator judges the plan's shelves (`ceiling run --url`), with the id CSVs its own
    // init container writes, sent on to the agents
    assert_eq!(a[0], "run", "{a:?}");
    assert!(a.windows(2).any(|w| w == ["--data-dir", "/data"]), "{a:?}");
    let run_tmpl = Some(run.spec.as_ref().unwrap().template.clone());
    let run_pod = pod(&run_tmpl);
    assert_eq!(
        run_pod.init_containers.as_ref().map(|c| c[0].name.as_str()),
        Some("data")
    );
    for j in &d.jobs {
        assert!(
            j.spec.as_ref().unwrap().active_deadline_seconds.is_some(),
            "every run is bounded"
        );
    }
}

#[test]
fn an_unknown_field_is_caught_by_the_strict_decoder() {
    // the check above would pass anything if the decoder ignored unknown fields silently
    let files = render(&options(), &stacks()).unwrap();
    let f = files
        .iter()
        .find(|f| f.path == "stacks/go-pgx.yaml")
        .unwrap();
    let bad = f
        .text
        .replacen("replicas: 1", "replicas: 1\n  replica: 1", 1);
    assert_ne!(bad, f.text);
    let r = std::panic::catch_unwind(|| {
        decode(&[File {
            path: "bad.yaml".into(),
            text: bad,
        }])
    });
    assert!(r.is_err(), "a misspelt field must fail decoding");
}

#[test]
fn dockerfiles_build_each_stack_with_its_own_commands() {
    let files = render(&options(), &stacks()).unwrap();
    let go = files
        .iter()
        .find(|f| f.path == "docker/go-pgx/Dockerfile")
        .unwrap();
    assert!(go.text.contains("FROM golang:"));
    assert!(
        go.text
            .contains(r#"RUN ["go","build","-o","target/server","."]"#),
        "{}",
        go.text
    );
    assert!(go.text.contains(r#"CMD ["./target/server"]"#));
    let jdbi = files
        .iter()
        .find(|f| f.path == "docker/spring-mvc-jdbi/Dockerfile")
        .unwrap();
    assert!(
        jdbi.text.contains("temurin-21"),
        "java21.sh stacks get JDK 21: {}",
        jdbi.text
    );
    assert!(jdbi
        .text
        .contains("COPY stacks/spring-common stacks/spring-common\n"));
}

#[test]
fn refuses_what_a_cluster_could_not_take() {
    let mut o = options();
    o.token = "short".into();
    assert!(render(&o, &stacks())
        .unwrap_err()
        .to_string()
        .contains("16 characters"));
    let mut s = stacks();
    s[0].cpus = 0.0;
    assert!(render(&options(), &s)
        .unwrap_err()
        .to_string()
        .contains("go-pgx"));
}
