//! A minimal executor for tests and simulations: core has no async runtime,
//! and its futures need none (stores that do I/O bring their own).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Runs a future to completion on this thread, spinning on wake-ups. Meant
/// for futures that never wait on the outside world (memory stores, pure
/// code); a future that waits on I/O would spin.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let flag = Arc::new(Flag(AtomicBool::new(true)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    loop {
        flag.0.store(false, Ordering::SeqCst);
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        if !flag.0.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }
}

/// Polls every future in turn until all are done, like `join_all`: the
/// interleaving at each `Pending` is what concurrency tests need.
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (i, f) in futures.iter_mut().enumerate() {
            if outputs[i].is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(out) => outputs[i] = Some(out),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(outputs.iter_mut().filter_map(Option::take).collect())
        }
    })
    .await
}

/// Polls two futures of different kinds in turn until both are done.
pub async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (Box::pin(a), Box::pin(b));
    let (mut out_a, mut out_b) = (None, None);
    std::future::poll_fn(move |cx| {
        if out_a.is_none()
            && let Poll::Ready(out) = a.as_mut().poll(cx)
        {
            out_a = Some(out);
        }
        if out_b.is_none()
            && let Poll::Ready(out) = b.as_mut().poll(cx)
        {
            out_b = Some(out);
        }
        match (out_a.take(), out_b.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                (out_a, out_b) = (a, b);
                Poll::Pending
            }
        }
    })
    .await
}

/// Returns `Pending` once, waking itself: a cooperative yield with no
/// runtime. Stores without I/O await it so that every store operation is an
/// await point where other futures (and simulated crashes) can come in.
pub async fn yield_now() {
    YieldOnce(false).await
}

struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}
