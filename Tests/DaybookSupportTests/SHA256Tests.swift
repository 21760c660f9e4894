import DaybookSupport
import Testing

/// SHA-256 against FIPS 180-4's examples (NIST's "abc", the 448-bit message, a million
/// 'a') and the padding's edges, whose digests are Python's hashlib.sha256.
@Suite struct SHA256Tests {
    @Test func nistVectors() {
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    /// 55 bytes leave room for the 0x80 and the length in one block, 56 do not; 64 and 120 fill blocks.
    @Test func paddingEdges() {
        let expected = [
            55: "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            56: "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            63: "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
            65: "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0",
            119: "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb",
            120: "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c",
        ]
        for (n, digest) in expected {
            #expect(SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: n)) == digest, "\(n) bytes")
        }
    }

    /// Fed in pieces of any size, the digest is the whole message's.
    @Test func piecesGiveTheWholeDigest() {
        let message = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        for cut in [0, 1, 7, 55, 56] {
            var hasher = SHA256()
            hasher.update(message[..<cut])
            hasher.update(message[cut...])
            #expect(hasher.finish() == SHA256.digest(message), "cut at \(cut)")
        }
    }

    @Test func constantTimeEqualCompares() {
        #expect(SHA256.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!SHA256.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!SHA256.constantTimeEqual([1, 2, 3], [1, 2]))
    }
}
