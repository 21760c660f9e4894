/// The version `daybook --version` prints; the one place it is written.
enum Version {
    static let string = "0.1.0"
}
