import APNsCore
import Testing

@Suite struct PriorityHTTP2Tests {
    @Test func theHTTP2APIAddsOneToTenAndFive() throws {
        #expect(Priority.http2Values == [.immediate, .conservePower, .lowest])
        #expect(try Priority(validatingHTTP2: 1) == .lowest)
        #expect(try Priority(validatingHTTP2: 10) == .immediate)
        #expect(Priority.lowest.isValidForHTTP2 && !Priority(rawValue: 7).isValidForHTTP2)
    }

    @Test(arguments: [0, 2, 7, 11, -1])
    func otherValuesAreRefusedWithTheThreeNamed(value: Int) {
        #expect(
            throws: LegacyAPNsError(
                .invalidValue, "priority must be 10 (immediate), 5 (conserve power) or 1 (lowest), not \(value)")
        ) { try Priority(validatingHTTP2: value) }
    }

    @Test func theBinaryProtocolStillRefusesOne() {
        #expect(throws: LegacyAPNsError.self) { try Priority(validating: 1) }
    }
}
