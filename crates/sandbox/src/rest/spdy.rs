//! The SPDY/3.1 side of the kubelet's streams, as far as Kubernetes clients use it: the
//! `Upgrade: SPDY/3.1` handshake with its `X-Stream-Protocol-Version` negotiation, and the
//! framing of a connection — streams the client opens (`SYN_STREAM`) with their headers, the
//! server's replies (`SYN_REPLY`), data frames with `FIN`, `RST_STREAM`, `PING` and `GOAWAY`.
//!
//! Header blocks are compressed with one zlib stream per direction of the connection: the
//! client's with SPDY/3's dictionary, which this reader sets when the stream asks for it; this
//! side's without one, which a SPDY reader accepts (the zlib header says so). Flow control
//! (`WINDOW_UPDATE`) is not applied: Kubernetes' SPDY library does not either.

use bytes::{Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use http::{Response, header};
use http_body_util::{BodyExt, Empty, Full};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};

use super::ResponseBody;
use super::upgrade;

/// The header naming the stream protocols a client speaks, and the one the server chose.
const PROTOCOL_HEADER: &str = "x-stream-protocol-version";

/// SPDY/3's header dictionary: these names and values, each with its length as four bytes,
/// then the text after them.
const DICTIONARY_WORDS: [&str; 65] = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

const DICTIONARY_TAIL: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request",
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented",
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,",
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=",
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
);

fn dictionary() -> Vec<u8> {
    let mut d = Vec::with_capacity(1423);
    for w in DICTIONARY_WORDS {
        d.extend_from_slice(&u32::try_from(w.len()).unwrap_or(0).to_be_bytes());
        d.extend_from_slice(w.as_bytes());
    }
    d.extend_from_slice(DICTIONARY_TAIL.as_bytes());
    d
}

/// The frames' types this side reads or writes.
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
/// `FLAG_FIN`: the sender's last frame on the stream.
const FIN: u8 = 0x01;

/// The upgrade's answer for a stream protocol among `supported`: 101 naming it, with the
/// connection's upgrade, or upstream's 403 when the client speaks none of them. A client that
/// names no protocol gets the first.
pub(super) fn accept(
    parts: &http::request::Parts,
    supported: &[&str],
) -> (Response<ResponseBody>, Option<OnUpgrade>) {
    let offered = upgrade::listed(&parts.headers, PROTOCOL_HEADER);
    let chosen =
        if offered.is_empty() { supported.first() } else { offered.iter().find(|p| supported.contains(p)) };
    let Some(chosen) = chosen else {
        let text = format!(
            "unable to upgrade: unable to negotiate protocol: client supports {offered:?}, server accepts {supported:?}"
        );
        return (plain(403, text), None);
    };
    let on = match upgrade::take(parts) {
        Ok(on) => on,
        Err(e) => return (plain(400, e.message), None),
    };
    let response = Response::builder()
        .status(101)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "SPDY/3.1")
        .header(PROTOCOL_HEADER, *chosen)
        .body(Empty::new().map_err(|e| match e {}).boxed_unsync())
        .expect("valid response");
    (response, Some(on))
}

/// A text answer, as the kubelet's handshake writes its refusals.
fn plain(code: u16, text: String) -> Response<ResponseBody> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(text)).map_err(|e| match e {}).boxed_unsync())
        .expect("valid response")
}

/// A frame the client sent.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// A stream opened, with its headers (names lower-case).
    SynStream { id: u32, headers: Vec<(String, String)>, fin: bool },
    /// Bytes on a stream; `fin` when the client sends no more on it.
    Data { id: u32, bytes: Bytes, fin: bool },
    /// The client reset a stream.
    Reset(u32),
    /// A ping to answer with its id.
    Ping(u32),
    /// The client is going away, or the connection ended or broke.
    Closed,
    /// A frame this side has nothing to do with (`SETTINGS`, `WINDOW_UPDATE`, …).
    Other,
}

/// Opens the upgraded connection: its reader and writer.
pub(super) async fn open(on: OnUpgrade) -> Option<(Reader, Writer)> {
    let upgraded = on.await.ok()?;
    let (rd, wr) = tokio::io::split(TokioIo::new(upgraded));
    Some((Reader::new(rd), Writer { io: wr, deflate: Deflate::default() }))
}

/// Reads the client's frames (from the upgraded connection; a test reads any stream).
pub(super) struct Reader<R = ReadHalf<TokioIo<Upgraded>>> {
    io: R,
    /// What has arrived of frames not yet read whole.
    buf: BytesMut,
    inflate: Inflate,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// Reads frames from `io`.
    fn new(io: R) -> Self {
        Self { io, buf: BytesMut::new(), inflate: Inflate::default() }
    }

    /// The next frame.
    ///
    /// Cancel-safe: a session waits for it beside its own output, and whichever comes first
    /// drops the other. Bytes already read stay in the buffer for the next call, so a frame
    /// is never cut in two.
    pub(super) async fn next(&mut self) -> Frame {
        loop {
            if let Some((first, flags, body)) = self.whole_frame() {
                return self.decode(first, flags, body).unwrap_or(Frame::Closed);
            }
            match self.io.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return Frame::Closed,
                Ok(_) => {}
            }
        }
    }

    /// The first frame of the buffer, once all of it has arrived: its first word, its flags and
    /// its body.
    fn whole_frame(&mut self) -> Option<(u32, u8, Bytes)> {
        let head = self.buf.get(..8)?;
        let length = usize::try_from(u32::from_be_bytes([0, head[5], head[6], head[7]])).ok()?;
        if self.buf.len() < 8 + length {
            self.buf.reserve(8 + length - self.buf.len());
            return None;
        }
        let mut frame = self.buf.split_to(8 + length);
        let head = frame.split_to(8);
        Some((u32::from_be_bytes([head[0], head[1], head[2], head[3]]), head[4], frame.freeze()))
    }

    fn decode(&mut self, first: u32, flags: u8, body: Bytes) -> Option<Frame> {
        if first & 0x8000_0000 == 0 {
            return Some(Frame::Data { id: first & 0x7fff_ffff, bytes: body, fin: flags & FIN != 0 });
        }
        let word = |at: usize| body.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        Some(match u16::try_from(first & 0xffff).ok()? {
            SYN_STREAM => {
                let id = word(0)? & 0x7fff_ffff;
                let headers = header_block(&self.inflate.block(body.get(10..)?)?)?;
                Frame::SynStream { id, headers, fin: flags & FIN != 0 }
            }
            RST_STREAM => Frame::Reset(word(0)? & 0x7fff_ffff),
            PING => Frame::Ping(word(0)?),
            GOAWAY => Frame::Closed,
            _ => Frame::Other,
        })
    }
}

/// The client's header blocks: one zlib stream over the connection, with SPDY's dictionary.
struct Inflate(Decompress);

impl Default for Inflate {
    fn default() -> Self {
        Self(Decompress::new(true))
    }
}

impl Inflate {
    /// Inflates one header block, continuing the stream; `None` for a corrupt one.
    fn block(&mut self, input: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(input.len() * 4 + 64);
        let mut at = 0;
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.capacity());
            }
            let (read, written) = (self.0.total_in(), self.0.total_out());
            let mut asked_dictionary = false;
            match self.0.decompress_vec(&input[at..], &mut out, FlushDecompress::Sync) {
                Ok(Status::Ok | Status::BufError | Status::StreamEnd) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.0.set_dictionary(&dictionary()).ok()?;
                    asked_dictionary = true;
                }
                Err(_) => return None,
            }
            let consumed = usize::try_from(self.0.total_in() - read).ok()?;
            at += consumed;
            if at >= input.len() && out.len() < out.capacity() {
                return Some(out);
            }
            if consumed == 0 && self.0.total_out() == written && !asked_dictionary {
                return None;
            }
        }
    }
}

/// A header block's name/value pairs; a value holding several (NUL-separated) gives a pair each.
fn header_block(block: &[u8]) -> Option<Vec<(String, String)>> {
    let mut rest = block;
    let mut take = |n: usize| {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    let word = |b: &[u8]| usize::try_from(u32::from_be_bytes(b.try_into().ok()?)).ok();
    let count = word(take(4)?)?;
    let mut pairs = Vec::new();
    for _ in 0..count {
        let n = word(take(4)?)?;
        let name = String::from_utf8_lossy(take(n)?).to_ascii_lowercase();
        let n = word(take(4)?)?;
        let value = String::from_utf8_lossy(take(n)?).into_owned();
        pairs.extend(value.split('\0').map(|v| (name.clone(), v.to_owned())));
    }
    Some(pairs)
}

/// Writes this side's frames.
pub(super) struct Writer {
    io: WriteHalf<TokioIo<Upgraded>>,
    deflate: Deflate,
}

impl Writer {
    /// Accepts the client's stream `id`, with no headers.
    pub(super) async fn reply(&mut self, id: u32) -> bool {
        let block = self.deflate.block(&0u32.to_be_bytes());
        let mut body = id.to_be_bytes().to_vec();
        body.extend_from_slice(&block);
        self.control(SYN_REPLY, 0, &body).await
    }

    /// Sends `bytes` on stream `id`; with `fin`, its last.
    pub(super) async fn data(&mut self, id: u32, bytes: &[u8], fin: bool) -> bool {
        let mut frame = Vec::with_capacity(bytes.len() + 8);
        frame.extend_from_slice(&(id & 0x7fff_ffff).to_be_bytes());
        frame.push(if fin { FIN } else { 0 });
        frame.extend_from_slice(&length(bytes.len()));
        frame.extend_from_slice(bytes);
        self.io.write_all(&frame).await.is_ok() && self.io.flush().await.is_ok()
    }

    /// Ends this side of the connection.
    pub(super) async fn shutdown(&mut self) {
        let _ = self.io.shutdown().await;
    }

    /// Answers a ping.
    pub(super) async fn pong(&mut self, ping: u32) -> bool {
        self.control(PING, 0, &ping.to_be_bytes()).await
    }

    /// Resets stream `id` (`INVALID_STREAM`, 2), for a stream this side cannot serve.
    pub(super) async fn reset(&mut self, id: u32) -> bool {
        let mut body = id.to_be_bytes().to_vec();
        body.extend_from_slice(&2u32.to_be_bytes());
        self.control(RST_STREAM, 0, &body).await
    }

    async fn control(&mut self, kind: u16, flags: u8, body: &[u8]) -> bool {
        let mut frame = Vec::with_capacity(body.len() + 8);
        frame.extend_from_slice(&(0x8003_0000u32 | u32::from(kind)).to_be_bytes());
        frame.push(flags);
        frame.extend_from_slice(&length(body.len()));
        frame.extend_from_slice(body);
        self.io.write_all(&frame).await.is_ok() && self.io.flush().await.is_ok()
    }
}

/// This side's header blocks: one zlib stream over the connection, without a dictionary.
struct Deflate(Compress);

impl Default for Deflate {
    fn default() -> Self {
        Self(Compress::new(Compression::default(), true))
    }
}

impl Deflate {
    /// Deflates one header block, continuing the stream, flushed so the client reads it whole.
    fn block(&mut self, block: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(block.len() + 64);
        let mut at = 0;
        loop {
            let before = self.0.total_in();
            if self.0.compress_vec(&block[at..], &mut out, FlushCompress::Sync).is_err() {
                return out;
            }
            at += usize::try_from(self.0.total_in() - before).unwrap_or(0);
            if at >= block.len() && out.len() < out.capacity() {
                return out;
            }
            out.reserve(out.capacity());
        }
    }
}

/// A frame's 24-bit length.
fn length(n: usize) -> [u8; 3] {
    let n = u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes();
    [n[1], n[2], n[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adler-32, as zlib names a dictionary by it.
    fn adler32(data: &[u8]) -> u32 {
        let (mut a, mut b) = (1u32, 0u32);
        for &x in data {
            a = (a + u32::from(x)) % 65521;
            b = (b + a) % 65521;
        }
        (b << 16) | a
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_given_up_half_way_through_a_frame_loses_none_of_it() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = Reader::new(server);
        // A data frame on stream 3 with FIN, "hello", arriving in two pieces.
        let frame = [&3u32.to_be_bytes()[..], &[FIN, 0, 0, 5], b"hello"].concat();
        client.write_all(&frame[..6]).await.unwrap();
        let waited = tokio::time::timeout(std::time::Duration::from_millis(1), reader.next()).await;
        assert!(waited.is_err(), "half a frame is not a frame");
        client.write_all(&frame[6..]).await.unwrap();
        let hello = Frame::Data { id: 3, bytes: Bytes::from_static(b"hello"), fin: true };
        let read = tokio::time::timeout(std::time::Duration::from_secs(1), reader.next()).await;
        assert_eq!(read.expect("the whole frame, once the rest arrives"), hello);
        drop(client);
        assert_eq!(reader.next().await, Frame::Closed);
    }

    #[test]
    fn the_dictionary_is_spdy_3s() {
        let d = dictionary();
        assert_eq!((d.len(), adler32(&d)), (1423, 0xe3c6_a7c2));
    }

    #[test]
    fn this_sides_blocks_read_back_without_a_dictionary() {
        let (mut deflate, mut inflate) = (Deflate::default(), Inflate::default());
        for _ in 0..3 {
            let sent = deflate.block(&0u32.to_be_bytes());
            assert_eq!(header_block(&inflate.block(&sent).unwrap()).unwrap(), []);
        }
    }

    #[test]
    fn header_blocks_round_trip_through_the_connections_zlib_streams() {
        // One side's compressor with the dictionary (as a client's), read by this reader's.
        let mut client = Compress::new(Compression::default(), true);
        client.set_dictionary(&dictionary()).unwrap();
        let block = |pairs: &[(&str, &str)]| {
            let mut b = u32::try_from(pairs.len()).unwrap().to_be_bytes().to_vec();
            for (n, v) in pairs {
                b.extend_from_slice(&u32::try_from(n.len()).unwrap().to_be_bytes());
                b.extend_from_slice(n.as_bytes());
                b.extend_from_slice(&u32::try_from(v.len()).unwrap().to_be_bytes());
                b.extend_from_slice(v.as_bytes());
            }
            b
        };
        let mut inflate = Inflate::default();
        for pairs in
            [vec![("streamtype", "error"), ("port", "80")], vec![("streamtype", "data"), ("port", "80")]]
        {
            let mut out = Vec::with_capacity(256);
            client.compress_vec(&block(&pairs), &mut out, FlushCompress::Sync).unwrap();
            let decoded = header_block(&inflate.block(&out).unwrap()).unwrap();
            let want: Vec<(String, String)> =
                pairs.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
            assert_eq!(decoded, want);
        }
    }
}
