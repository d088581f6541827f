//! Members' names on SQLite and PostgreSQL: a name another member goes by (letter case aside)
//! is refused at joining and at renaming, with a reason; staff rename a member and remove one
//! (their attempts stay stored, and they may join again); the audit log records both.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::common::{failing_design, As, TestApp};

async fn join(app: &TestApp, cookie: &str, code: &str, name: &str) -> crate::common::Answer {
    app.post(
        "/api/classes/join",
        &As::student(cookie),
        &json!({"code": code, "display_name": name}),
    )
    .await
}

async fn names_are_unique_and_staff_manage_members(app: TestApp) {
    let token = app.grader_token("teacher").await;
    let grader = As::grader(&token);
    let made = app
        .post("/api/classes", &grader, &json!({"name": "Data 101"}))
        .await;
    let class = made.body["id"].as_str().unwrap().to_string();
    let code = made.body["join_code"].as_str().unwrap().to_string();
    let (lea_cookie, lea) = app.new_student().await;
    let (other_cookie, other) = app.new_student().await;
    assert_eq!(
        join(&app, &lea_cookie, &code, "Léa Dubois").await.status,
        StatusCode::CREATED
    );
    let clash = join(&app, &other_cookie, &code, "léa dubois").await;
    assert_eq!(
        clash.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        clash.text
    );
    assert_eq!(clash.body["error"]["path"], "$.display_name");
    assert!(
        clash.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another member"),
        "{}",
        clash.text
    );
    assert_eq!(
        join(&app, &other_cookie, &code, "Léa D.").await.status,
        StatusCode::CREATED
    );
    // Joining again under one's own name is no clash.
    assert_eq!(
        join(&app, &lea_cookie, &code, "Léa Dubois").await.status,
        StatusCode::OK
    );

    let member = |student: &str| format!("/api/classes/{class}/students/{student}");
    let taken = app
        .send(
            Method::PATCH,
            &member(&other),
            &grader,
            &[],
            Some(
                json!({"display_name": "LÉA DUBOIS"})
                    .to_string()
                    .into_bytes(),
            ),
        )
        .await;
    assert_eq!(
        taken.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        taken.text
    );
    let renamed = app
        .send(
            Method::PATCH,
            &member(&other),
            &grader,
            &[],
            Some(
                json!({"display_name": "Léa Martin"})
                    .to_string()
                    .into_bytes(),
            ),
        )
        .await;
    assert_eq!(renamed.status, StatusCode::NO_CONTENT, "{}", renamed.text);
    let stranger = app
        .send(
            Method::PATCH,
            &member("s-00000000000000000000000000000000"),
            &grader,
            &[],
            Some(json!({"display_name": "X"}).to_string().into_bytes()),
        )
        .await;
    assert_eq!(stranger.status, StatusCode::NOT_FOUND, "{}", stranger.text);

    // Removed, Léa leaves the dashboard; her attempt stays stored; she may join again.
    let attempt = app
        .post(
            "/api/submissions",
            &As::student(&lea_cookie),
            &json!({"scenario": "safe-retry", "design": failing_design(), "class": class}),
        )
        .await;
    assert_eq!(attempt.status, StatusCode::CREATED, "{}", attempt.text);
    let removed = app
        .send(Method::DELETE, &member(&lea), &grader, &[], None)
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.text);
    let matrix = app
        .get(&format!("/api/classes/{class}/matrix"), &grader)
        .await;
    let names: Vec<&str> = matrix.body["students"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["display_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Léa Martin"]);
    let kept = app
        .get(
            &format!("/api/submissions/{}", attempt.body["id"].as_str().unwrap()),
            &grader,
        )
        .await;
    assert_eq!(kept.status, StatusCode::OK, "{}", kept.text);
    assert_eq!(
        join(&app, &lea_cookie, &code, "Léa Dubois").await.status,
        StatusCode::CREATED
    );

    let audit = app
        .get(&format!("/api/classes/{class}/audit"), &grader)
        .await;
    let details: Vec<&str> = audit
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert!(
        details.contains(&format!("renamed {other} from \"Léa D.\" to \"Léa Martin\"").as_str()),
        "{details:?}"
    );
    assert!(
        details.contains(&format!("removed {lea} (\"Léa Dubois\") from the class").as_str()),
        "{details:?}"
    );
}

crate::on_both_databases!(names_are_unique_and_staff_manage_members, |db| {
    names_are_unique_and_staff_manage_members(db.app().await).await;
});
