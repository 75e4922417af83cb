import Testing

@testable import TSyncModel

/// `EntityTag.ifMatch` reads the one quoted ASCII tag tsync sends from its bytes; every other header
/// goes the general way. The fast reading must give what the general one gives wherever it answers.
struct EntityTagTests {
    static let headers = [
        #""abc""#, #""""#, #"""#, #"" a b ""#, #""*""#, "*", #"W/"abc""#, #""a","b""#, #" "abc" "#, #""abc"#,
        #"abc""#, "\"\u{301}abc\"", "\"abc\u{301}\"", "\"é\"", #""a"b""#, "\"a\tb\"", #""MTIzNDU2Nzg5MA==""#,
        "\"\(String(repeating: "f", count: 64))\"", "", "\"a,b\"",
    ]

    @Test(arguments: headers)
    func theFastReadingAgreesWithTheGeneralOne(header: String) {
        let general = EntityTag.generalIfMatch(header)
        if let fast = EntityTag.singleQuotedTag(header) { #expect(fast == general, "\(header)") }
        #expect(EntityTag.ifMatch(header) == general)
    }

    @Test func theHeaderTSyncSendsTakesTheFastReading() {
        #expect(EntityTag.singleQuotedTag(EntityTag.quoted("0123abcd")) == .versions(["0123abcd"], hadWeakTags: false))
        #expect(EntityTag.singleQuotedTag(#"W/"x""#) == nil)
    }
}
