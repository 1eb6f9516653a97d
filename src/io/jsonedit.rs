//! Edits to a JSON file a user owns that change only the bytes of what is added
//! or removed: every other byte (the user's spacing, key order, escapes,
//! numbers) stays as it was. A small parser that keeps each value's span; an
//! insert copies the separator the container already uses, and a removal
//! takes exactly the separator an insert adds.

/// A parsed value and where it is in the text (`start..end`, bytes).
#[derive(Debug, Clone)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    /// Members: the key (decoded), where the member starts (its key), the value.
    Object(Vec<(String, usize, Node)>),
    Array(Vec<Node>),
    Scalar,
}

impl Node {
    /// The value of `key`, if this is an object with it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(m) => m.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }

    pub fn items(&self) -> &[Node] {
        match &self.kind {
            Kind::Array(a) => a,
            _ => &[],
        }
    }

    /// Every element's span (`start`, `end`): an object's members from their
    /// key, an array's items.
    fn spans(&self) -> Vec<(usize, usize)> {
        match &self.kind {
            Kind::Object(m) => m.iter().map(|(_, s, v)| (*s, v.end)).collect(),
            Kind::Array(a) => a.iter().map(|n| (n.start, n.end)).collect(),
            Kind::Scalar => Vec::new(),
        }
    }
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.i))
    }

    fn string(&mut self) -> Result<(), String> {
        // at the opening quote
        self.i += 1;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
        self.fail("an unterminated string")
    }

    fn value(&mut self) -> Result<Node, String> {
        self.ws();
        let start = self.i;
        let Some(&c) = self.b.get(self.i) else {
            return self.fail("the end of the text");
        };
        self.depth += 1;
        if self.depth > 256 {
            return self.fail("nesting too deep");
        }
        let kind = match c {
            b'{' => {
                self.i += 1;
                let mut m = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let ks = self.i;
                        if self.b.get(self.i) != Some(&b'"') {
                            return self.fail("a key expected");
                        }
                        self.string()?;
                        let key: String = serde_json::from_slice(&self.b[ks..self.i])
                            .map_err(|e| format!("a bad key at byte {ks}: {e}"))?;
                        self.ws();
                        if self.b.get(self.i) != Some(&b':') {
                            return self.fail("':' expected");
                        }
                        self.i += 1;
                        let v = self.value()?;
                        m.push((key, ks, v));
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.fail("',' or '}' expected"),
                        }
                    }
                }
                Kind::Object(m)
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        a.push(self.value()?);
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.fail("',' or ']' expected"),
                        }
                    }
                }
                Kind::Array(a)
            }
            b'"' => {
                self.string()?;
                Kind::Scalar
            }
            _ => {
                while self.i < self.b.len()
                    && !matches!(
                        self.b[self.i],
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.i += 1;
                }
                if self.i == start {
                    return self.fail("a value expected");
                }
                Kind::Scalar
            }
        };
        self.depth -= 1;
        Ok(Node {
            start,
            end: self.i,
            kind,
        })
    }
}

/// Parse `text` (which serde_json has already accepted) keeping spans.
pub fn parse(text: &str) -> Result<Node, String> {
    let mut p = P {
        b: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let n = p.value()?;
    p.ws();
    if p.i != p.b.len() {
        return p.fail("trailing text");
    }
    Ok(n)
}

/// Remove element `i` of the object or array `c` from `text`: the element and
/// one separator (the one after it, or for the last element the one before).
pub fn remove(text: &str, c: &Node, i: usize) -> String {
    let spans = c.spans();
    let (s, e) = match spans.len() {
        0 => return text.to_string(),
        1 => (c.start + 1, c.end - 1),
        n if i + 1 < n => (spans[i].0, spans[i + 1].0),
        _ => (spans[i - 1].1, spans[i].1),
    };
    format!("{}{}", &text[..s], &text[e..])
}

/// Append `new` (the JSON of an array item, or `"key": value` for an object) as
/// the last element of `c`, separated as the container separates its elements.
pub fn append(text: &str, c: &Node, new: &str) -> String {
    let spans = c.spans();
    match spans.len() {
        0 => format!("{}{new}{}", &text[..c.start + 1], &text[c.end - 1..]),
        n => {
            // the separator before the last element, or the leading space of the
            // only one ("\n    " in a pretty file)
            let sep = if n >= 2 {
                text[spans[n - 2].1..spans[n - 1].0].to_string()
            } else {
                format!(",{}", &text[c.start + 1..spans[0].0])
            };
            let sep = if sep.trim_start().starts_with(',') {
                sep
            } else {
                format!(",{sep}")
            };
            let at = spans[n - 1].1;
            format!("{}{sep}{new}{}", &text[..at], &text[at..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_then_remove_gives_the_same_bytes() {
        for text in [
            "{\n    \"a\": [1, 2],\n  \"b\" :{\"x\":\"\\\"}\"}\n}\n",
            "{\"a\":[]}",
            "{\"a\":[ 7 ]}",
            "{\n  \"a\": [\n    {\"k\": 1}\n  ]\n}",
        ] {
            let root = parse(text).unwrap();
            let a = root.get("a").unwrap();
            let added = append(text, a, "{\"new\": true}");
            let v: serde_json::Value = serde_json::from_str(&added).unwrap();
            assert_eq!(v["a"].as_array().unwrap().last().unwrap()["new"], true);
            let r2 = parse(&added).unwrap();
            let a2 = r2.get("a").unwrap();
            let back = remove(&added, a2, a2.items().len() - 1);
            assert_eq!(back, text);
            let added = append(text, &root, "\"z\": 1");
            let r3 = parse(&added).unwrap();
            assert_eq!(remove(&added, &r3, r3.spans().len() - 1), text);
        }
    }
}
