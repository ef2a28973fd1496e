import Foundation
import Lattice
import Testing
import LatticeTestSupport

@Model final class Person {
    @Attribute(.unique) var name: String = ""
    @Relationship(inverse: \Passport.holder) var passport: Passport?
    init(name: String) { self.name = name }
}

@Model final class Passport {
    var number: String = ""
    var holder: Person?
    init(number: String) { self.number = number }
}

/// A key made of an attribute and a to-one: the membership of a person in a club, once per pair.
@Model final class Membership {
    @Attribute(.unique) var club: String = ""
    @Attribute(.unique) var member: Person?
    var since: Int = 0
    init(club: String, member: Person, since: Int) { self.club = club; self.member = member; self.since = since }
}

@Suite struct RelationshipEdgeTests {
    let directory = TemporaryDirectory("lattice-models")

    @Test func oneToOneKeepsBothSidesInStep() async throws {
        let container = try await openContainer([Person.self], in: directory, name: "store")
        let context = ModelContext(container)
        let ada = Person(name: "Ada"), bob = Person(name: "Bob")
        context.insert(ada)
        context.insert(bob)
        let passport = Passport(number: "X1")
        ada.passport = passport
        #expect(passport.holder === ada)
        // Giving the passport to Bob takes it from Ada.
        passport.holder = bob
        #expect(bob.passport === passport && ada.passport == nil)
        try context.save()
        let reread = ModelContext(container)
        let people = try reread.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.name)]))
        #expect(people.map { $0.passport?.number } == [nil, "X1"])
        #expect(people[1].passport?.holder === people[1])
        await container.close()
    }

    @Test func aKeyCanNameARelatedObject() async throws {
        let container = try await openContainer([Membership.self], in: directory, name: "store")
        let context = ModelContext(container)
        let ada = Person(name: "Ada")
        context.insert(ada)
        try context.save()
        context.insert(Membership(club: "chess", member: ada, since: 2020))
        context.insert(Membership(club: "chess", member: ada, since: 2021))
        context.insert(Membership(club: "go", member: ada, since: 2019))
        try context.save()
        let memberships = try ModelContext(container).fetch(FetchDescriptor<Membership>(sortBy: [SortDescriptor(\.club)]))
        #expect(memberships.map(\.club) == ["chess", "go"], "one membership per club and person")
        #expect(memberships.first?.since == 2021 && memberships.first?.member?.name == "Ada")
        #expect(memberships.first?.persistentModelID?.recordID.recordName == "Membership:chess,Person:Ada")
        await container.close()
    }
}
