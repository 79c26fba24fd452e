"""Byte n-gram baselines of the language-model gate (`press`): an add-one bigram and interpolated Witten-Bell
n-grams up to 4 bytes, fitted on the char_lm task's training split and scored on its held-out split. The split
and vocabulary are the task's (experiments/tasks/char_lm.cpp): the last round(holdout * size) bytes are held out;
the vocabulary is every distinct byte of the file. Witten-Bell interpolation as in Chen & Goodman 1998, "An
Empirical Study of Smoothing Techniques for Language Modeling" (TR-10-98, section 2.4):
P(w | h) = (c(h w) + N1+(h .) P(w | h')) / (c(h) + N1+(h .)), h' = h without its first byte, the unigram
interpolated with the uniform distribution over the vocabulary. Standard library only."""
import math


class NgramError(Exception):
    pass


def split(path, holdout):
    """(training bytes, held-out bytes, vocabulary size) of the char_lm task on `path`."""
    with open(path, "rb") as f:
        text = f.read()
    held = int(math.floor(holdout * len(text) + 0.5))
    return text[:len(text) - held], text[len(text) - held:], len(set(text))


def bigram_loss(path, holdout):
    """Held-out loss (nats/char) of a byte bigram with add-one (Laplace) smoothing, scored on every consecutive pair
    of the held-out split. -> (loss, vocabulary size, training bytes, held-out pairs)."""
    train, test, vocab = split(path, holdout)
    pair, prev = {}, {}
    for a, b in zip(train, train[1:]):
        pair[(a, b)] = pair.get((a, b), 0) + 1
        prev[a] = prev.get(a, 0) + 1
    pairs = list(zip(test, test[1:]))
    if not pairs:
        raise NgramError(f"{path}: the held-out split has no pair of bytes")
    loss = -sum(math.log((pair.get((a, b), 0) + 1) / (prev.get(a, 0) + vocab)) for a, b in pairs) / len(pairs)
    return loss, vocab, len(train), len(pairs)


class WittenBell:
    """An interpolated Witten-Bell byte model with histories of up to `order` - 1 bytes, fitted on `train`."""

    def __init__(self, train, order, vocab):
        self.order, self.vocab, self.n = order, vocab, len(train)
        self.count = [dict() for _ in range(order)]    # k -> {history of k bytes + next byte: count}
        self.history = [dict() for _ in range(order)]  # k -> {history of k bytes: [c(h), N1+(h .)]}
        for k in range(order):
            for i in range(k, len(train)):
                key = train[i - k:i + 1]
                c = self.count[k].get(key, 0)
                self.count[k][key] = c + 1
                h = self.history[k].setdefault(key[:-1], [0, 0])
                h[0] += 1
                h[1] += c == 0

    def prob(self, history, w):
        """P(w | the last order - 1 bytes of history); history: bytes."""
        c0, n1 = self.history[0][b""]
        p = (self.count[0].get(bytes([w]), 0) + n1 / self.vocab) / (c0 + n1)
        for k in range(1, min(self.order - 1, len(history)) + 1):
            h = history[len(history) - k:]
            ch = self.history[k].get(h)
            if ch is None:
                break  # a longer history containing this one is unseen too
            p = (self.count[k].get(h + bytes([w]), 0) + ch[1] * p) / (ch[0] + ch[1])
        return p


def witten_bell_loss(path, holdout, order):
    """Held-out loss (nats/char) of the interpolated Witten-Bell model of `order` (1: unigram, 4: three bytes of
    history), scored on every held-out byte after the first (the bigram's pairs), its history taken from the held-out
    split only. -> (loss, scored bytes)."""
    train, test, vocab = split(path, holdout)
    if len(test) < 2:
        raise NgramError(f"{path}: the held-out split has no pair of bytes")
    m = WittenBell(train, order, vocab)
    loss = -sum(math.log(m.prob(test[max(0, i - order + 1):i], test[i])) for i in range(1, len(test))) / (len(test) - 1)
    return loss, len(test) - 1


def best_ngram(path, holdout, max_order=4):
    """{order: held-out loss} for orders 2..max_order and the best (lowest) one -> (losses, best order)."""
    losses = {n: witten_bell_loss(path, holdout, n)[0] for n in range(2, max_order + 1)}
    return losses, min(losses, key=losses.get)


def position_curve(path, holdout, order, window, stride=7):
    """Held-out loss (nats/char) at each position 0..window-1 of windows of `window` bytes (starting every `stride`
    bytes of the held-out split), the model's history cut at the window's start, as a model that sees only the
    window would have it: how much a model with order - 1 bytes of context gains from position alone."""
    train, test, vocab = split(path, holdout)
    if len(test) < window:
        raise NgramError(f"{path}: the held-out split is shorter than a window of {window} bytes")
    m = WittenBell(train, order, vocab)
    sums, n = [0.0] * window, 0
    for s in range(0, len(test) - window + 1, stride):
        w = test[s:s + window]
        for p in range(window):
            sums[p] -= math.log(m.prob(w[max(0, p - order + 1):p], w[p]))
        n += 1
    return [x / n for x in sums]
