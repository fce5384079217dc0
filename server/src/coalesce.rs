//! Coalesced writes: a connection's frames gathered into one `write` per scheduler round.
//!
//! hyper serves every HTTP/2 stream (a gRPC call, a watch) on a task of its own, which hands its
//! frames to the connection's task and wakes it. tokio runs a task woken by a running task next
//! (its LIFO slot), so when a committed change wakes the hundred watch streams of one connection,
//! the connection's task runs after every few of them and writes each time: measured, 1.35
//! million `writev` calls for 10 million events (`benches/SERVED_RESULTS.md`, session 16).
//!
//! [`Coalesced`] wraps a connection's socket. Writes go into a buffer. A flush is put off: the
//! task wakes itself, which tokio queues behind the tasks already runnable (the other streams the
//! same change woke), and reports the flush done; the first flush after the task's next read
//! sends the buffer in one vectored write, or puts it off once more if that round added bytes (at
//! most [`Coalesced::ROUNDS`] rounds). A buffer of [`Coalesced::LIMIT`] bytes, a write already
//! under way and a shutdown are written at once. Nothing waits for a timer, so a unary reply is
//! late by one scheduler round, not by Nagle's delay.
//!
//! The contract this relies on: the protocol above flushes again after each read in every later
//! poll, as HTTP/2 (h2) does at the end of each poll of its connection. A protocol that may wait
//! for its peer without flushing again (a TLS handshake) must run below, not above, this wrapper:
//! `serve` completes TLS handshakes before wrapping the stream.
//!
//! Written here rather than taken from a crate: tokio's `BufWriter` flushes whenever asked, which
//! is the behaviour to change, and no maintained crate defers a flush by a scheduler round.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A socket whose writes are gathered and whose flushes wait for the scheduler (module docs).
#[derive(Debug)]
pub struct Coalesced<IO> {
    io: IO,
    /// What is buffered, in chunks of [`Coalesced::CHUNK`] bytes or more (a growing buffer would
    /// copy itself on every doubling), sent with one vectored write.
    chunks: VecDeque<Vec<u8>>,
    /// Bytes in `chunks`, and bytes of the first chunk already written.
    buffered: usize,
    head_written: usize,
    /// The flush that was put off, if any.
    owed: Option<Owed>,
}

/// A flush put off: the task woke itself and the bytes are owed to the socket.
#[derive(Debug)]
struct Owed {
    /// Bytes buffered when it was last put off.
    buffered: usize,
    /// Rounds it has been put off.
    rounds: usize,
    /// The connection has read since: this is a later poll of its task.
    polled_again: bool,
}

impl<IO> Coalesced<IO> {
    /// Beyond this many buffered bytes, a write first sends what is buffered.
    pub const LIMIT: usize = 256 << 10;
    /// A flush is put off for at most this many scheduler rounds, while each adds bytes.
    pub const ROUNDS: usize = 4;
    /// The size of a buffer chunk.
    const CHUNK: usize = 16 << 10;

    /// `io` with its writes coalesced.
    pub fn new(io: IO) -> Self {
        Coalesced { io, chunks: VecDeque::new(), buffered: 0, head_written: 0, owed: None }
    }

    /// The wrapped socket.
    pub fn get_ref(&self) -> &IO {
        &self.io
    }

    /// Adds `data` to the buffer.
    fn push(&mut self, mut data: &[u8]) {
        self.buffered += data.len();
        if let Some(last) = self.chunks.back_mut() {
            let n = data.len().min(last.capacity() - last.len());
            last.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if !data.is_empty() {
            let mut chunk = Vec::with_capacity(data.len().max(Self::CHUNK));
            chunk.extend_from_slice(data);
            self.chunks.push_back(chunk);
        }
    }
}

impl<IO: AsyncWrite + Unpin> Coalesced<IO> {
    /// Writes the whole buffer to the socket.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.buffered > 0 {
            let mut slices = [IoSlice::new(&[]); 64];
            let mut k = 0;
            for (i, c) in self.chunks.iter().take(slices.len()).enumerate() {
                slices[i] = IoSlice::new(if i == 0 { &c[self.head_written..] } else { c });
                k = i + 1;
            }
            let mut n = match Pin::new(&mut self.io).poll_write_vectored(cx, &slices[..k]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            };
            self.buffered -= n;
            while n > 0 {
                let rest = self.chunks[0].len() - self.head_written;
                if n < rest {
                    self.head_written += n;
                    break;
                }
                n -= rest;
                self.head_written = 0;
                self.chunks.pop_front();
            }
        }
        self.chunks.clear();
        self.head_written = 0;
        self.owed = None;
        Poll::Ready(Ok(()))
    }

    /// Makes room for `n` more bytes: at the limit, what is buffered goes out first.
    fn poll_room(&mut self, cx: &mut Context<'_>, n: usize) -> Poll<io::Result<()>> {
        if self.buffered > 0 && self.buffered + n > Self::LIMIT {
            return self.poll_drain(cx);
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for Coalesced<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        // HTTP/2 reads first in each poll of its connection and writes after: a read after a
        // put-off flush marks the poll that owes the write.
        if let Some(owed) = &mut self.owed {
            owed.polled_again = true;
        }
        let filled = buf.filled().len();
        let read = Pin::new(&mut self.io).poll_read(cx, buf);
        // The peer closed or the read failed: the connection may end without flushing or
        // shutting down (h2 does on a TLS read error), so what is owed goes now, if it can.
        let ended = match &read {
            Poll::Ready(Ok(())) => buf.filled().len() == filled && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended && self.buffered > 0 {
            let _ = self.poll_drain(cx);
        }
        read
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Coalesced<IO> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(data)])
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let n: usize = bufs.iter().map(|b| b.len()).sum();
        if let Err(e) = std::task::ready!(this.poll_room(cx, n)) {
            return Poll::Ready(Err(e));
        }
        if this.buffered == 0 && n >= Self::LIMIT {
            return Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        }
        for b in bufs {
            this.push(b);
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.buffered == 0 {
            return Pin::new(&mut this.io).poll_flush(cx);
        }
        // Put off: the task wakes itself, so it is polled again behind the tasks already
        // runnable (tokio queues a task that woke itself at the back), and the first flush after
        // that poll's read sends what they added too; while each round adds bytes, it is put off
        // again, up to `ROUNDS`. Until then the connection goes on as if flushed: HTTP/2 flushes
        // to make room in its own buffer, several times a poll, and each of those would
        // otherwise be a system call. A drain under way (`head_written`) is not put off.
        let buffered = this.buffered;
        let put_off = this.head_written == 0 && buffered < Self::LIMIT;
        match &mut this.owed {
            _ if !put_off => {}
            None => {
                this.owed = Some(Owed { buffered, rounds: 1, polled_again: false });
                cx.waker().wake_by_ref();
                return Poll::Ready(Ok(()));
            }
            // The same poll: its wake-up is already asked for.
            Some(o) if !o.polled_again => {
                o.buffered = buffered;
                return Poll::Ready(Ok(()));
            }
            Some(o) if buffered > o.buffered && o.rounds < Self::ROUNDS => {
                *o = Owed { buffered, rounds: o.rounds + 1, polled_again: false };
                cx.waker().wake_by_ref();
                return Poll::Ready(Ok(()));
            }
            Some(_) => {}
        }
        if let Err(e) = std::task::ready!(this.poll_drain(cx)) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Err(e) = std::task::ready!(this.poll_drain(cx)) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

impl<IO: tonic::transport::server::Connected> tonic::transport::server::Connected for Coalesced<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::task::ArcWake;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::AsyncWriteExt;

    /// A socket that records each write it is given and has nothing to read (or is at its end).
    #[derive(Default)]
    struct Recorder {
        writes: Vec<Vec<u8>>,
        flushes: usize,
        eof: bool,
    }

    impl AsyncRead for Recorder {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, _: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            if self.eof {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            }
        }
    }

    impl AsyncWrite for Recorder {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
            // At most 100 000 bytes a call, as a socket with a full buffer takes part of a write.
            let n = data.len().min(100_000);
            self.writes.push(data[..n].to_vec());
            Poll::Ready(Ok(n))
        }
        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.flushes += 1;
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Counts wake-ups.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl ArcWake for Wakes {
        fn wake_by_ref(arc_self: &Arc<Self>) {
            arc_self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// One poll of a connection's task as HTTP/2 makes it: a read, then `frames` written, then a
    /// flush; whether the flush left the bytes in the buffer.
    fn poll_like_h2(c: &mut Coalesced<Recorder>, cx: &mut Context<'_>, frames: &[&[u8]]) {
        let mut space = [0u8; 16];
        assert!(Pin::new(&mut *c).poll_read(cx, &mut ReadBuf::new(&mut space)).is_pending());
        for f in frames {
            assert!(matches!(Pin::new(&mut *c).poll_write(cx, f), Poll::Ready(Ok(n)) if n == f.len()));
        }
        assert!(matches!(Pin::new(&mut *c).poll_flush(cx), Poll::Ready(Ok(()))));
    }

    #[test]
    fn a_flush_is_put_off_while_each_round_adds_frames_then_one_write_sends_them_all() {
        let wakes = Arc::new(Wakes::default());
        let waker = futures_util::task::waker(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut c = Coalesced::new(Recorder::default());
        poll_like_h2(&mut c, &mut cx, &[b"one;", b"two;"]);
        assert!(c.get_ref().writes.is_empty(), "the first flush is put off");
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "and the task woke itself");
        // More flushes in the same poll (no read between): still put off, no second wake-up.
        assert!(Pin::new(&mut c).poll_write(&mut cx, b"three;").is_ready());
        assert!(Pin::new(&mut c).poll_flush(&mut cx).is_ready());
        assert!(c.get_ref().writes.is_empty());
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        // The next round added frames: put off again.
        poll_like_h2(&mut c, &mut cx, &[b"four;"]);
        assert!(c.get_ref().writes.is_empty());
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
        // A round that adds nothing sends everything in one write.
        poll_like_h2(&mut c, &mut cx, &[]);
        assert_eq!(c.get_ref().writes, vec![b"one;two;three;four;".to_vec()]);
        assert_eq!(c.get_ref().flushes, 1);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
        // An empty buffer flushes at once, without a wake-up.
        poll_like_h2(&mut c, &mut cx, &[]);
        assert_eq!(c.get_ref().writes.len(), 1);
        assert_eq!(c.get_ref().flushes, 2);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn what_is_owed_is_written_when_the_peer_closes() {
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut c = Coalesced::new(Recorder::default());
        poll_like_h2(&mut c, &mut cx, &[b"last reply"]);
        assert!(c.get_ref().writes.is_empty());
        c.io.eof = true;
        let mut space = [0u8; 16];
        assert!(matches!(Pin::new(&mut c).poll_read(&mut cx, &mut ReadBuf::new(&mut space)), Poll::Ready(Ok(()))));
        assert_eq!(c.get_ref().writes, vec![b"last reply".to_vec()]);
    }

    #[test]
    fn a_flush_is_put_off_for_at_most_the_round_limit() {
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut c = Coalesced::new(Recorder::default());
        for _ in 0..Coalesced::<Recorder>::ROUNDS {
            poll_like_h2(&mut c, &mut cx, &[b"frame;"]);
            assert!(c.get_ref().writes.is_empty());
        }
        poll_like_h2(&mut c, &mut cx, &[b"last"]);
        assert_eq!(c.get_ref().writes.concat().len(), 6 * Coalesced::<Recorder>::ROUNDS + 4);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_large_burst_goes_out_whole_and_in_order_and_shutdown_drains() {
        let mut c = Coalesced::new(Recorder::default());
        let mut sent = Vec::new();
        for i in 0..2_000u32 {
            let frame = vec![(i % 251) as u8; 300 + (i as usize % 7) * 100];
            let slices = [IoSlice::new(&frame[..10]), IoSlice::new(&frame[10..])];
            let n = std::future::poll_fn(|cx| Pin::new(&mut c).poll_write_vectored(cx, &slices)).await.unwrap();
            assert_eq!(n, frame.len());
            sent.extend_from_slice(&frame);
        }
        // Past the limit, the buffer went out before any flush, in writes of at most 100 000
        // bytes (the recorder's), so a chunk was written in part and finished later.
        assert!(!c.get_ref().writes.is_empty());
        c.write_all(&vec![7u8; Coalesced::<Recorder>::LIMIT + 1]).await.unwrap();
        sent.extend(std::iter::repeat_n(7u8, Coalesced::<Recorder>::LIMIT + 1));
        c.write_all(b"tail").await.unwrap();
        sent.extend_from_slice(b"tail");
        c.shutdown().await.unwrap();
        let got: Vec<u8> = c.get_ref().writes.concat();
        assert_eq!(got.len(), sent.len());
        assert!(got == sent, "the bytes reach the socket whole and in order");
    }
}
