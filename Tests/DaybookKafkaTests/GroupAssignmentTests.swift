import DaybookKafka
import Testing

/// The consumer-protocol assignment bytes a coordinator describes members with, and the
/// owner claims projectors put in their commits.
@Suite struct GroupAssignmentTests {
    /// int16 version 0; 2 topics: "health-samples" [3, 1], "other" [0]; 0 bytes of user data.
    static let bytes: [UInt8] = [0, 0, 0, 0, 0, 2]
        + [0, 14] + Array("health-samples".utf8) + [0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1]
        + [0, 5] + Array("other".utf8) + [0, 0, 0, 1, 0, 0, 0, 0]
        + [0, 0, 0, 0]

    @Test func anAssignmentGivesThePartitionsOfTheTopicAskedAbout() {
        #expect(GroupAssignment.partitions(inAssignment: Self.bytes, topic: "health-samples") == [1, 3])
        #expect(GroupAssignment.partitions(inAssignment: Self.bytes, topic: "other") == [0])
        #expect(GroupAssignment.partitions(inAssignment: Self.bytes, topic: "missing") == [])
        // A member with nothing assigned yet sends no bytes.
        #expect(GroupAssignment.partitions(inAssignment: [], topic: "health-samples") == [])
        // Cut short: not an assignment, never a guess.
        #expect(GroupAssignment.partitions(inAssignment: Array(Self.bytes.prefix(20)), topic: "health-samples") == nil)
    }

    @Test func theOwnerOfAPartitionIsTheMemberHoldingIt() {
        let a = GroupAssignment.Member(memberID: "m-a", clientID: "daybook-a", host: "node-a", partitions: [0, 2])
        let b = GroupAssignment.Member(memberID: "m-b", clientID: "daybook-b", host: "node-b", partitions: [1])
        let group = GroupAssignment(group: "g", state: "Stable", members: [a, b], source: .coordinator)
        #expect(group.owner(of: 2) == a)
        #expect(group.owner(of: 1) == b)
        #expect(group.owner(of: 3) == nil)
    }

    @Test func anOwnerClaimReadsBackAndOtherMetadataIsNoClaim() {
        let claim = OwnerClaim(memberID: "rdkafka-1\t2", clientID: "daybook a", host: "node-a")
        let read = OwnerClaim(text: claim.text)
        #expect(read == OwnerClaim(memberID: "rdkafka-1 2", clientID: "daybook a", host: "node-a"))
        #expect(OwnerClaim(text: "") == nil)
        #expect(OwnerClaim(text: "some other tool's metadata") == nil)
        #expect(OwnerClaim(text: "daybook-owner/1\tmember=x") == nil)
    }
}
