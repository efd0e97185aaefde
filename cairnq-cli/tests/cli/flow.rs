//! `cairnq flow ID`: a root, two children (one with a child of its own)
//! and a join after both, drawn as a tree with each node's status, the
//! join's wait and dependencies; the same tree from any task of the flow;
//! `-o json` with parent ids and dependencies; an unknown id refused with
//! exit 3, as `cairnq get` refuses it.

use serde_json::{Value, json};

use crate::support::Fixture;

async fn flow_draws_the_tree_of_a_root(fixture: &Fixture) {
    let (client, cli) = (&fixture.client, &fixture.cli);
    let root = client.submit("split", &json!({})).await.expect("submit root");
    let id_of = |v: Value| v["id"].as_str().expect("an id").to_string();
    let a = id_of(cli.json(&["-o", "json", "submit", "chunk_a", "--parent", &root.id]));
    let b = id_of(cli.json(&["-o", "json", "submit", "chunk_b", "--parent", &root.id]));
    let a_task = client.get(&a).await.expect("get").expect("a");
    let piece = client.submit("piece", &json!({})).child_of(&a_task).await.expect("a grandchild");
    let join = client.submit("merge", &json!({})).child_of(&root).after([&a, &b]).await.expect("the join");
    let outsider = client.submit("other", &json!({})).await.expect("another root");
    fixture.succeed(&a_task).await;

    let drawn = cli.run(&["flow", &root.id]);
    assert_eq!(drawn.code, 0, "{}", drawn.stderr);
    let want = format!(
        "split  {root}  queued\n  chunk_a  {a}  succeeded\n    piece  {piece}  queued\n  chunk_b  {b}  queued\n  \
         merge  {join}  queued, waiting for 1 of 2 tasks  after: {a}, {b}\n",
        root = root.id,
        piece = piece.id,
        join = join.id,
    );
    assert_eq!(drawn.stdout, want);
    assert!(!drawn.stdout.contains(&outsider.id), "another root's task is not in the flow");

    let from_a_child = cli.run(&["flow", &piece.id]);
    assert_eq!(from_a_child.stdout, want, "any task of the flow draws its root's tree");
    assert!(from_a_child.stderr.contains(&format!("belongs to the flow of {}", root.id)), "{}", from_a_child.stderr);

    let document = cli.json(&["-o", "json", "flow", &root.id]);
    assert_eq!(document["root_id"], json!(root.id));
    let nodes = document["nodes"].as_array().expect("nodes");
    let ids: Vec<&str> = nodes.iter().filter_map(|n| n["id"].as_str()).collect();
    assert_eq!(ids, [root.id.as_str(), &a, &piece.id, &b, &join.id]);
    assert_eq!(nodes[0]["parent_id"], Value::Null);
    assert_eq!(nodes[2]["parent_id"], json!(a));
    assert_eq!(nodes[2]["depth"], json!(2));
    assert_eq!(nodes[1]["status"], json!("succeeded"));
    assert_eq!(nodes[4]["parent_id"], json!(root.id));
    assert_eq!(nodes[4]["dependencies"], json!([a, b]));
    assert_eq!(nodes[4]["wait"]["remaining"], json!(1));
    assert_eq!(nodes[3]["dependencies"], json!([]));

    cli.run(&["flow", "task_01J0000000000000000000NOPE"]).refused(3, "no task with id task_01J0000000000000000000NOPE");
    cli.run(&["flow", &root.id, "--max", "0"]).refused(2, "--max");
}

#[tokio::test(flavor = "multi_thread")]
async fn flow_on_sqlite() {
    flow_draws_the_tree_of_a_root(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn flow_on_postgres() {
    flow_draws_the_tree_of_a_root(&Fixture::postgres().await).await;
}
