//! The effect ledger as a job sees it: a retried run skips an effect an
//! earlier run recorded as done, and a superseded run cannot start one.

use super::*;

/// A retried run skips an effect an earlier run recorded as done, and a
/// superseded run cannot start a new effect.
pub async fn effect_ledger_skips_recorded_effect<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "ledger",
        "schedule = \"0 * * * *\"\nlease = \"1m\"\nretry = { backoff = \"1s\", max_backoff = \"1s\" }",
    );
    create(c, &spec, t0()).await;
    let charges = Cell::new(0);
    let now = Cell::new(at(HOUR + 1));
    let clock = || now.get();

    let a = claimed(c, &spec, now.get(), Trigger::Tick, "a").await;
    let ctx_a = JobContext::new(c, &spec, a.clone(), &clock);
    let charge = || async {
        charges.set(charges.get() + 1);
        Ok::<_, String>("charge-42".to_string())
    };
    assert_eq!(
        ctx_a.effect("charge", charge).await.expect("effect"),
        "charge-42"
    );
    // a crashes before completing; its lease expires; b takes the slot over.
    now.set(at(HOUR + 3 * MIN));
    let b = claimed(c, &spec, now.get(), Trigger::Tick, "b").await;
    assert_eq!(b.slot, a.slot);
    let ctx_b = JobContext::new(c, &spec, b.clone(), &clock);
    assert_eq!(ctx_b.idempotency_key(), ctx_a.idempotency_key());
    let again = ctx_b.effect("charge", charge).await.expect("effect");
    assert_eq!(again, "charge-42", "the recorded result comes back");
    assert_eq!(charges.get(), 1, "the effect was not repeated");
    // The superseded run may not start a new effect.
    let stale = ctx_a
        .effect("email", || async { Ok::<_, String>("sent".into()) })
        .await;
    assert!(
        matches!(stale, Err(crate::coord::EffectError::Superseded { .. })),
        "{stale:?}"
    );
    let begin = c
        .begin_effect(
            &spec,
            &ctx_a.effect_key("email"),
            "a",
            a.fence,
            now.get(),
            Duration::from_secs(60),
        )
        .await
        .expect("begin");
    assert!(matches!(begin, EffectBegin::Superseded { .. }), "{begin:?}");
    c.complete(&spec, b.fence, None, now.get())
        .await
        .expect("complete");
}
