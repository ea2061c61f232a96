//! The terminal an exec or attach with `tty` gets, as a pty's line discipline stands between
//! the client and the process: what the client types is echoed and handed to the process a
//! line at a time (Enter, `\r`, ends a line; backspace erases; Ctrl-C drops the line; Ctrl-D
//! on an empty line ends the input), and the process's newlines reach the client as `\r\n`.

/// A terminal's input state: the line being typed.
#[derive(Debug, Default)]
pub(crate) struct LineDiscipline {
    line: Vec<u8>,
}

/// What typed bytes come to.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Typed {
    /// What the terminal shows back.
    pub(crate) echo: Vec<u8>,
    /// The lines completed, each with its `\n`, for the process to read.
    pub(crate) lines: Vec<Vec<u8>>,
    /// Whether the input ended (Ctrl-D on an empty line).
    pub(crate) end: bool,
}

impl LineDiscipline {
    /// Takes what the client typed.
    pub(crate) fn input(&mut self, bytes: &[u8]) -> Typed {
        let mut t = Typed::default();
        for &b in bytes {
            match b {
                b'\r' | b'\n' => {
                    self.line.push(b'\n');
                    t.lines.push(std::mem::take(&mut self.line));
                    t.echo.extend_from_slice(b"\r\n");
                }
                0x7f | 0x08 => {
                    if self.line.pop().is_some() {
                        t.echo.extend_from_slice(b"\x08 \x08");
                    }
                }
                0x03 => {
                    self.line.clear();
                    t.echo.extend_from_slice(b"^C\r\n");
                }
                0x04 if self.line.is_empty() => {
                    t.end = true;
                    return t;
                }
                0x04 => t.lines.push(std::mem::take(&mut self.line)),
                b => {
                    self.line.push(b);
                    t.echo.push(b);
                }
            }
        }
        t
    }
}

/// A process's output as the terminal shows it: each `\n` a `\r\n`.
pub(crate) fn output(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 8);
    for &b in bytes {
        if b == b'\n' {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lines_are_echoed_and_edited() {
        let mut ld = LineDiscipline::default();
        let t = ld.input(b"ecx\x7fho hi\r");
        assert_eq!(t.echo, b"ecx\x08 \x08ho hi\r\n");
        assert_eq!(t.lines, vec![b"echo hi\n".to_vec()]);
        assert!(ld.input(b"ab\x03").lines.is_empty());
        assert!(ld.input(b"\x04").end);
        assert_eq!(output(b"a\nb\n"), b"a\r\nb\r\n");
    }
}
