#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Where `meshctl pair` takes the code typed by the user from: `-` reads it from standard input
/// (with a prompt and without echo on a terminal); anything else is the code itself, given as
/// an argument, which other local users can read in the process list (hence a warning).
enum PairCodeInput {
    /// The one-line warning printed on stderr when the code is an argument.
    static let argumentWarning =
        "meshctl: warning: a code given as an argument can be read by other local users (process list); type it at a prompt with `meshctl pair -`, or pipe it in"

    /// The most bytes read for a code: a code is 8 characters plus separators and spaces.
    static let maximumBytes = 64

    /// Reads the code from standard input: one line, at most ``maximumBytes`` bytes. On a
    /// terminal prints a prompt on stderr and turns echo off while the user types.
    static func readFromStandardInput() throws -> String {
        let terminal = isatty(STDIN_FILENO) == 1
        var saved = termios()
        var echoOff = false
        if terminal {
            FileHandle.standardError.write(Data("Code shown on the other device: ".utf8))
            if tcgetattr(STDIN_FILENO, &saved) == 0 {
                var quiet = saved
                quiet.c_lflag &= ~tcflag_t(ECHO)
                echoOff = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0
            }
        }
        defer {
            if echoOff {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
                FileHandle.standardError.write(Data("\n".utf8))
            }
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(STDIN_FILENO, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { break }   // end of input or an error: take what was read
            if byte == UInt8(ascii: "\n") { break }
            guard line.count < maximumBytes else {
                throw CLIFailure(exitCode: CLIFailure.usage, code: "invalid-code",
                                 message: "the code read from standard input is longer than \(maximumBytes) bytes; a code looks like 7KQ4-MX9D",
                                 json: false)
            }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else {
            throw CLIFailure(exitCode: CLIFailure.usage, code: "invalid-code",
                             message: "no code on standard input; type the code the other device shows (it looks like 7KQ4-MX9D)",
                             json: false)
        }
        return text
    }
}
