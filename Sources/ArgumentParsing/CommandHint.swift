/// "Did you mean …": the nearest candidate by edit distance, for rules errors and command-line errors alike.
public enum CommandHint {
    public static func nearest(_ word: String, _ candidates: [String]) -> String? {
        let w = word.lowercased()
        return candidates.map { ($0, distance(w, $0)) }.filter { $0.1 <= (w.count <= 3 ? 1 : 2) && $0.1 > 0 }
            .min { $0.1 < $1.1 }?.0
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = Swift.min(
                    previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
