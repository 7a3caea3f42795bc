import Testing
@testable import SwitchboardServer

private struct Payload: Decodable {
    struct Inner: Decodable { let count: Int }
    let name: String
    let flag: Bool?
    let inner: Inner?
    let tags: [String]?
}

@Suite("JSON bodies and the error envelope", .timeLimit(.minutes(3)))
struct JSONBodyTests {
    private func error(_ json: String) -> APIError? {
        do {
            _ = try JSONBody.decode(Payload.self, from: Array(json.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test func validBodyDecodesAndUnknownFieldsAreIgnored() throws {
        let payload = try JSONBody.decode(
            Payload.self, from: Array(#"{"name":"a","extra":[1,2],"inner":{"count":3}}"#.utf8))
        #expect(payload.name == "a")
        #expect(payload.inner?.count == 3)
    }

    @Test(arguments: [
        (#"{"name": 5}"#, "name", "field 'name' must be a string"),
        (#"{}"#, "name", "field 'name' is required"),
        (#"{"name": null}"#, "name", "field 'name' must be a string, not null"),
        (#"{"name": "a", "flag": "yes"}"#, "flag", "field 'flag' must be a boolean"),
        (#"{"name": "a", "inner": {"count": "3"}}"#, "inner.count", "field 'inner.count' must be an integer"),
        (#"{"name": "a", "inner": {}}"#, "inner.count", "field 'inner.count' is required"),
        (#"{"name": "a", "tags": ["x", 1]}"#, "tags[1]", "field 'tags[1]' must be a string"),
    ])
    func wrongTypesNameTheField(json: String, field: String, message: String) {
        let failure = error(json)
        #expect(failure?.status == 400)
        #expect(failure?.code == .validationFailed)
        #expect(failure?.field == field)
        #expect(failure?.message == message)
    }

    @Test(arguments: ["", "{", "[1,2]", "\"text\"", "nul"])
    func nonObjectBodiesAre400(json: String) {
        let failure = error(json)
        #expect(failure?.status == 400)
        #expect(failure?.field == nil)
    }

    @Test func envelopeShape() {
        let response = APIError.validation("field 'a' is \"bad\"", field: "a").response
        #expect(response.status == 400)
        #expect(response.headers["Content-Type"] == "application/json")
        let body = String(decoding: response.bodyBytes, as: UTF8.self)
        #expect(body == #"{"error":{"code":"VALIDATION_FAILED","message":"field 'a' is \"bad\"","field":"a"}}"#)
    }

    /// NaN and infinities are not JSON; a body that writes them still gets a 400 naming the
    /// field, at any depth; a body that is otherwise broken names none.
    @Test(
        arguments: [
            (#"{"name":"a","inner":{"count": NaN}}"#, "count"),
            (#"{"name":"a","flag": Infinity}"#, "flag"),
            (#"{"name":"a","tags":[], "x": -Infinity}"#, "x"),
            (#"{"name":"a","inner":{"count": 1e999}}"#, "count"),
            (#"{"name":"a",}}"#, nil),
        ] as [(String, String?)])
    func nonFiniteNumbersNameTheirField(json: String, field: String?) {
        let failure = error(json)
        #expect(failure?.status == 400)
        #expect(failure?.field == field, "\(json): \(failure?.message ?? "")")
    }
}
