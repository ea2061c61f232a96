//! The shell's grammar: a script's text to its tree, with no side effect. The subset is what
//! container commands and clients' exec tests write: simple commands with quoting, `$NAME`,
//! `${NAME}`, `$?` and `$(…)`; redirections of a descriptor to another or to a file;
//! pipelines, `!`, `&&`, `||`, `;` and newlines; `for`, `while`, `until`, `if` and `{ …; }`.

use std::fmt;

/// A parsed script: its and-or lists in order.
pub(crate) type Script = Vec<AndOr>;

/// A pipeline, then the pipelines joined to it by `&&` (true) or `||` (false).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AndOr {
    pub(crate) first: Pipeline,
    pub(crate) rest: Vec<(bool, Pipeline)>,
}

/// Commands joined by `|`, its status negated by a leading `!`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pipeline {
    pub(crate) negated: bool,
    pub(crate) commands: Vec<Command>,
}

/// One command of a pipeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// `NAME=value …` assignments, the words of a command and its redirections.
    Simple { assigns: Vec<(String, Word)>, words: Vec<Word>, redirects: Vec<Redirect> },
    /// `for NAME in WORDS; do BODY; done`.
    For { name: String, items: Vec<Word>, body: Script },
    /// `while COND; do BODY; done`, or `until` when `until` is true.
    While { until: bool, cond: Script, body: Script },
    /// `if COND; then BODY; [elif …;] [else …;] fi`: each branch's condition and body, then
    /// the else body.
    If { branches: Vec<(Script, Script)>, otherwise: Option<Script> },
    /// `{ LIST; }`.
    Group(Script),
}

/// Where a descriptor goes: `>&2`, `2>&1`, `> FILE`, `>> FILE`, `< FILE`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Redirect {
    pub(crate) fd: u8,
    pub(crate) to: RedirectTo,
}

/// A redirection's target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RedirectTo {
    /// Another descriptor (`>&N`).
    Fd(u8),
    /// A file written (`>`), appended to (`>>`) or read (`<`).
    File { path: Word, append: bool, read: bool },
}

/// A word: its parts, joined; unquoted expansions are split on blanks.
pub(crate) type Word = Vec<Part>;

/// A piece of a word.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Text as written (quotes removed).
    Lit(String),
    /// Text from quotes, never split.
    Quoted(String),
    /// `$NAME`, `${NAME}`, `$?`, `$#`, `$1`…; `quoted` when inside double quotes.
    Var { name: String, quoted: bool },
    /// `$(…)` or `` `…` ``, its output with trailing newlines removed.
    Subst { script: Script, quoted: bool },
}

/// Why a script does not parse, in the words `sh` uses (`syntax error: unexpected "done"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// The text ended inside a construct: an interactive shell reads another line.
    Incomplete,
    /// A token where none of its kind may be.
    Unexpected(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Incomplete => f.write_str("syntax error: unexpected end of file"),
            Self::Unexpected(t) => write!(f, "syntax error: unexpected {t:?}"),
        }
    }
}

/// A token of the script.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(Word),
    /// An operator: `;`, `&&`, `||`, `|`, `!`, `{`, `}` (as words), or a newline (`\n`).
    Op(&'static str),
    Redirect(Redirect),
}

/// Parses `text` as a whole script.
pub(crate) fn parse(text: &str) -> Result<Script, ParseError> {
    let tokens = lex(text)?;
    let mut p = Parser { tokens, pos: 0 };
    let script = p.list(&[])?;
    match p.peek() {
        None => Ok(script),
        Some(t) => Err(ParseError::Unexpected(t.describe())),
    }
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Self::Word(w) => word_text(w),
            Self::Op("\n") => "newline".to_owned(),
            Self::Op(o) => (*o).to_owned(),
            Self::Redirect(_) => "redirection".to_owned(),
        }
    }

    /// The literal text of a word that is a reserved word (`do`, `done`, …), if it is one.
    fn keyword(&self) -> Option<&str> {
        match self {
            Self::Word(w) => match w.as_slice() {
                [Part::Lit(s)] => Some(s),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A word's text as written, for messages.
fn word_text(w: &Word) -> String {
    w.iter()
        .map(|p| match p {
            Part::Lit(s) | Part::Quoted(s) => s.clone(),
            Part::Var { name, .. } => format!("${name}"),
            Part::Subst { .. } => "$(...)".to_owned(),
        })
        .collect()
}

const RESERVED: [&str; 13] =
    ["do", "done", "for", "in", "while", "until", "if", "then", "elif", "else", "fi", "{", "}"];

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn at_keyword(&self, words: &[&str]) -> bool {
        self.peek().and_then(Token::keyword).is_some_and(|k| words.contains(&k))
    }

    fn skip_newlines(&mut self) {
        while self.peek() == Some(&Token::Op("\n")) {
            self.pos += 1;
        }
    }

    /// And-or lists separated by `;` or newlines, up to one of `ends` (a reserved word) or the
    /// end of the tokens.
    fn list(&mut self, ends: &[&str]) -> Result<Script, ParseError> {
        let mut script = Vec::new();
        loop {
            self.skip_newlines();
            match self.peek() {
                None => {
                    return if ends.is_empty() { Ok(script) } else { Err(ParseError::Incomplete) };
                }
                Some(t) if t.keyword().is_some_and(|k| ends.contains(&k)) => return Ok(script),
                Some(Token::Op(")")) => return Ok(script),
                _ => {}
            }
            script.push(self.and_or()?);
            match self.peek() {
                Some(Token::Op(";" | "\n")) => self.pos += 1,
                None => {}
                Some(t) if t.keyword().is_some_and(|k| ends.contains(&k)) => {}
                Some(t) => return Err(ParseError::Unexpected(t.describe())),
            }
        }
    }

    fn and_or(&mut self) -> Result<AndOr, ParseError> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        while let Some(Token::Op(op @ ("&&" | "||"))) = self.peek() {
            let and = *op == "&&";
            self.pos += 1;
            self.skip_newlines();
            rest.push((and, self.pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn pipeline(&mut self) -> Result<Pipeline, ParseError> {
        let negated = self.peek() == Some(&Token::Op("!"));
        if negated {
            self.pos += 1;
        }
        let mut commands = vec![self.command()?];
        while self.peek() == Some(&Token::Op("|")) {
            self.pos += 1;
            self.skip_newlines();
            commands.push(self.command()?);
        }
        Ok(Pipeline { negated, commands })
    }

    fn expect(&mut self, word: &str) -> Result<(), ParseError> {
        self.skip_newlines();
        match self.next() {
            Some(t) if t.keyword() == Some(word) => Ok(()),
            Some(t) => Err(ParseError::Unexpected(t.describe())),
            None => Err(ParseError::Incomplete),
        }
    }

    fn command(&mut self) -> Result<Command, ParseError> {
        match self.peek().and_then(Token::keyword) {
            Some("for") => {
                self.pos += 1;
                let name = match self.next() {
                    Some(t) => t.keyword().map(str::to_owned).ok_or(ParseError::Unexpected(t.describe()))?,
                    None => return Err(ParseError::Incomplete),
                };
                let mut items = Vec::new();
                self.skip_newlines();
                if self.at_keyword(&["in"]) {
                    self.pos += 1;
                    while let Some(Token::Word(w)) = self.peek() {
                        if self.at_keyword(&["do"]) {
                            break;
                        }
                        items.push(w.clone());
                        self.pos += 1;
                    }
                    match self.next() {
                        Some(Token::Op(";" | "\n")) => {}
                        Some(t) if t.keyword() == Some("do") => self.pos -= 1,
                        Some(t) => return Err(ParseError::Unexpected(t.describe())),
                        None => return Err(ParseError::Incomplete),
                    }
                } else {
                    // `for NAME; do`: over the positional parameters, of which there are none.
                    if self.peek() == Some(&Token::Op(";")) {
                        self.pos += 1;
                    }
                }
                self.expect("do")?;
                let body = self.list(&["done"])?;
                self.expect("done")?;
                Ok(Command::For { name, items, body })
            }
            Some(k @ ("while" | "until")) => {
                let until = k == "until";
                self.pos += 1;
                let cond = self.list(&["do"])?;
                self.expect("do")?;
                let body = self.list(&["done"])?;
                self.expect("done")?;
                Ok(Command::While { until, cond, body })
            }
            Some("if") => {
                self.pos += 1;
                let mut branches = Vec::new();
                let mut otherwise = None;
                loop {
                    let cond = self.list(&["then"])?;
                    self.expect("then")?;
                    let body = self.list(&["elif", "else", "fi"])?;
                    branches.push((cond, body));
                    self.skip_newlines();
                    match self.next().as_ref().and_then(Token::keyword) {
                        Some("elif") => continue,
                        Some("else") => {
                            otherwise = Some(self.list(&["fi"])?);
                            self.expect("fi")?;
                            break;
                        }
                        Some("fi") => break,
                        _ => return Err(ParseError::Incomplete),
                    }
                }
                Ok(Command::If { branches, otherwise })
            }
            Some("{") => {
                self.pos += 1;
                let body = self.list(&["}"])?;
                self.expect("}")?;
                Ok(Command::Group(body))
            }
            Some(k) if RESERVED.contains(&k) => Err(ParseError::Unexpected(k.to_owned())),
            _ => self.simple(),
        }
    }

    fn simple(&mut self) -> Result<Command, ParseError> {
        let (mut assigns, mut words, mut redirects) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            match self.peek() {
                Some(Token::Word(w)) => {
                    let w = w.clone();
                    self.pos += 1;
                    match assignment(&w) {
                        Some(a) if words.is_empty() => assigns.push(a),
                        _ => words.push(w),
                    }
                }
                Some(Token::Redirect(r)) => {
                    redirects.push(r.clone());
                    self.pos += 1;
                }
                _ => break,
            }
        }
        if words.is_empty() && assigns.is_empty() && redirects.is_empty() {
            return match self.peek() {
                None => Err(ParseError::Incomplete),
                Some(t) => Err(ParseError::Unexpected(t.describe())),
            };
        }
        Ok(Command::Simple { assigns, words, redirects })
    }
}

/// `NAME=value` as an assignment, when the word starts with a valid name and `=`.
fn assignment(w: &Word) -> Option<(String, Word)> {
    let Some(Part::Lit(first)) = w.first() else { return None };
    let (name, value) = first.split_once('=')?;
    if !is_name(name) {
        return None;
    }
    let mut rest = vec![Part::Lit(value.to_owned())];
    rest.extend(w[1..].iter().cloned());
    Some((name.to_owned(), rest))
}

/// A variable name: a letter or `_`, then letters, digits or `_`.
pub(crate) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits the text into tokens.
fn lex(text: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut lx = Lexer { chars, pos: 0 };
    lx.tokens(None)
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).copied()
    }

    /// Tokens up to the end, or to the `)` closing a `$(` (`close`).
    fn tokens(&mut self, close: Option<char>) -> Result<Vec<Token>, ParseError> {
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return if close.is_some() { Err(ParseError::Incomplete) } else { Ok(out) };
            };
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    out.push(Token::Op("\n"));
                }
                ')' if close == Some(')') => {
                    self.pos += 1;
                    return Ok(out);
                }
                ';' | '|' | '&' | '(' | ')' => out.push(self.operator()?),
                '>' | '<' => out.push(Token::Redirect(self.redirect(0)?)),
                d if d.is_ascii_digit() && matches!(self.peek_at(1), Some('>' | '<')) => {
                    self.pos += 1;
                    let fd = u8::try_from(d.to_digit(10).unwrap_or(1)).unwrap_or(1);
                    out.push(Token::Redirect(self.redirect(fd)?));
                }
                _ => {
                    let w = self.word()?;
                    // `!` alone is the pipeline's negation; `{`/`}` stay words, read as reserved.
                    if w == [Part::Lit("!".to_owned())] {
                        out.push(Token::Op("!"));
                    } else {
                        out.push(Token::Word(w));
                    }
                }
            }
        }
    }

    fn operator(&mut self) -> Result<Token, ParseError> {
        let two: String = self.chars[self.pos..].iter().take(2).collect();
        let op = match two.as_str() {
            "&&" => "&&",
            "||" => "||",
            ";;" => return Err(ParseError::Unexpected(";;".to_owned())),
            _ => match self.chars[self.pos] {
                ';' => ";",
                '|' => "|",
                // Background jobs and subshells are not in the subset.
                c => return Err(ParseError::Unexpected(c.to_string())),
            },
        };
        self.pos += op.len();
        Ok(Token::Op(op))
    }

    /// A redirection of `fd` (`0` meaning the operator's default) at `>` or `<`.
    fn redirect(&mut self, fd: u8) -> Result<Redirect, ParseError> {
        let read = self.peek() == Some('<');
        self.pos += 1;
        let fd = if fd == 0 && !read { 1 } else { fd };
        let append = !read && self.peek() == Some('>');
        if append {
            self.pos += 1;
        }
        if self.peek() == Some('&') {
            self.pos += 1;
            let to = self.peek().and_then(|c| c.to_digit(10)).ok_or_else(|| {
                ParseError::Unexpected(self.peek().map_or("newline".to_owned(), |c| c.to_string()))
            })?;
            self.pos += 1;
            return Ok(Redirect { fd, to: RedirectTo::Fd(u8::try_from(to).unwrap_or(1)) });
        }
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        match self.peek() {
            None | Some('\n' | ';' | '|' | '&' | ')') => Err(ParseError::Unexpected("newline".to_owned())),
            _ => Ok(Redirect { fd, to: RedirectTo::File { path: self.word()?, append, read } }),
        }
    }

    /// A word, up to an unquoted blank or operator.
    fn word(&mut self) -> Result<Word, ParseError> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let flush = |lit: &mut String, parts: &mut Vec<Part>| {
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(lit)));
            }
        };
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '|' | '&' | '(' | ')' | '<' | '>' => break,
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(c) => {
                            flush(&mut lit, &mut parts);
                            parts.push(Part::Quoted(c.to_string()));
                            self.pos += 1;
                        }
                        None => lit.push('\\'),
                    }
                }
                '\'' => {
                    self.pos += 1;
                    let start = self.pos;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    if self.peek().is_none() {
                        return Err(ParseError::Incomplete);
                    }
                    flush(&mut lit, &mut parts);
                    parts.push(Part::Quoted(self.chars[start..self.pos].iter().collect()));
                    self.pos += 1;
                }
                '"' => {
                    self.pos += 1;
                    flush(&mut lit, &mut parts);
                    self.double_quoted(&mut parts)?;
                }
                '$' | '`' => match self.dollar(false)? {
                    Some(p) => {
                        flush(&mut lit, &mut parts);
                        parts.push(p);
                    }
                    None => lit.push('$'),
                },
                c => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        flush(&mut lit, &mut parts);
        Ok(parts)
    }

    /// The inside of `"…"`, the opening quote read.
    fn double_quoted(&mut self, parts: &mut Vec<Part>) -> Result<(), ParseError> {
        let mut text = String::new();
        // `""` is an empty word, not no word.
        parts.push(Part::Quoted(String::new()));
        loop {
            match self.peek() {
                None => return Err(ParseError::Incomplete),
                Some('"') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(c @ ('$' | '`' | '"' | '\\')) => {
                            text.push(c);
                            self.pos += 1;
                        }
                        Some('\n') => self.pos += 1,
                        _ => text.push('\\'),
                    }
                }
                Some('$' | '`') => match self.dollar(true)? {
                    Some(p) => {
                        if !text.is_empty() {
                            parts.push(Part::Quoted(std::mem::take(&mut text)));
                        }
                        parts.push(p);
                    }
                    None => text.push('$'),
                },
                Some(c) => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
        if !text.is_empty() {
            parts.push(Part::Quoted(text));
        }
        Ok(())
    }

    /// An expansion at `$` or `` ` ``; `None` for a `$` that starts none (it stays a `$`).
    fn dollar(&mut self, quoted: bool) -> Result<Option<Part>, ParseError> {
        if self.peek() == Some('`') {
            self.pos += 1;
            let start = self.pos;
            while self.peek().is_some_and(|c| c != '`') {
                self.pos += 1;
            }
            if self.peek().is_none() {
                return Err(ParseError::Incomplete);
            }
            let inner: String = self.chars[start..self.pos].iter().collect();
            self.pos += 1;
            let script = parse(&inner)?;
            return Ok(Some(Part::Subst { script, quoted }));
        }
        self.pos += 1;
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                let tokens = self.tokens(Some(')'))?;
                let mut p = Parser { tokens, pos: 0 };
                let script = p.list(&[])?;
                Ok(Some(Part::Subst { script, quoted }))
            }
            Some('{') => {
                self.pos += 1;
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '}') {
                    self.pos += 1;
                }
                if self.peek().is_none() {
                    return Err(ParseError::Incomplete);
                }
                let name: String = self.chars[start..self.pos].iter().collect();
                self.pos += 1;
                Ok(Some(Part::Var { name, quoted }))
            }
            Some(c @ ('?' | '#' | '$' | '@' | '*' | '0'..='9')) => {
                self.pos += 1;
                Ok(Some(Part::Var { name: c.to_string(), quoted }))
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let start = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    self.pos += 1;
                }
                Ok(Some(Part::Var { name: self.chars[start..self.pos].iter().collect(), quoted }))
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Word {
        vec![Part::Lit(s.to_owned())]
    }

    #[test]
    fn a_for_loop_over_a_substitution() {
        let s = parse("for i in $(seq 1 3); do echo $i; done").unwrap();
        let [AndOr { first, rest }] = s.as_slice() else { panic!("{s:?}") };
        assert!(rest.is_empty());
        let Command::For { name, items, body } = &first.commands[0] else { panic!() };
        assert_eq!(name, "i");
        assert!(matches!(&items[0][0], Part::Subst { quoted: false, .. }));
        assert_eq!(body.len(), 1);
    }

    #[test]
    fn quotes_and_redirections() {
        let s = parse(r#"echo "a $X" 'b c' >&2; cat </dev/null 2>&1"#).unwrap();
        let Command::Simple { words, redirects, .. } = &s[0].first.commands[0] else { panic!() };
        assert_eq!(words[0], lit("echo"));
        assert_eq!(
            words[1],
            vec![
                Part::Quoted(String::new()),
                Part::Quoted("a ".into()),
                Part::Var { name: "X".into(), quoted: true }
            ]
        );
        assert_eq!(words[2], vec![Part::Quoted("b c".into())]);
        assert_eq!(redirects, &[Redirect { fd: 1, to: RedirectTo::Fd(2) }]);
        let Command::Simple { redirects, .. } = &s[1].first.commands[0] else { panic!() };
        assert_eq!(redirects[1], Redirect { fd: 2, to: RedirectTo::Fd(1) });
    }

    #[test]
    fn an_unfinished_construct_is_incomplete_and_a_stray_word_unexpected() {
        assert_eq!(parse("for i in 1 2; do echo $i"), Err(ParseError::Incomplete));
        assert_eq!(parse("echo 'open"), Err(ParseError::Incomplete));
        assert_eq!(parse("done"), Err(ParseError::Unexpected("done".into())));
        assert_eq!(parse("echo a &"), Err(ParseError::Unexpected("&".into())));
        assert_eq!(
            parse("if true; then echo y; elif false; then :; else echo n; fi && echo z").map(|s| s.len()),
            Ok(1)
        );
        assert_eq!(parse("while true; do sleep 1; done").map(|s| s.len()), Ok(1));
        assert_eq!(parse("X=1 Y=$X env | cat\n\n! false || echo no").map(|s| s.len()), Ok(2));
    }
}
