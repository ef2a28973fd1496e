import Lattice

/// `record get` and `record save` in their plain forms, read without the
/// argument parser: a script calls them thousands of times, and the parser's
/// first use in a process (its reflection over each command's properties)
/// costs more than the command's own work. Anything else — help, another
/// flag, a repeated option, a value the parser would refuse — is left to the
/// parser, which then gives its usual answer or error; both run the same code.
struct QuickCommand: Equatable {
    enum Action: Equatable {
        case get(path: String)
        case save(path: String, recordType: String, fields: [String], ifTag: String?, allKeys: Bool)
    }

    var options: StoreOptions
    var action: Action

    init(options: StoreOptions, action: Action) {
        self.options = options
        self.action = action
    }

    /// Nil unless `arguments` (global options already moved after the
    /// subcommand) are one of the plain forms, valid as the parser checks them.
    init?(_ arguments: [String]) {
        guard arguments.count >= 3, arguments[0] == "record", arguments[1] == "get" || arguments[1] == "save" else { return nil }
        let saving = arguments[1] == "save"
        var options = StoreOptions()
        var positionals: [String] = []
        var values: [String: String] = [:]
        var flags: Set<String> = []
        var index = 2
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-") else {
                positionals.append(argument)
                continue
            }
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let name = parts[0]
            switch name {
            case "--json", "--all-keys":
                guard name == "--json" || saving, parts.count == 1, flags.insert(name).inserted else { return nil }
            case "--store", "--container", "--database", "--log-level", "--type", "--if-tag":
                guard saving || !["--type", "--if-tag"].contains(name) else { return nil }
                guard values[name] == nil else { return nil }
                if parts.count == 2 {
                    // `--store=` takes the next argument in the parser: left to it.
                    guard !parts[1].isEmpty else { return nil }
                    values[name] = parts[1]
                } else {
                    // The parser takes no value that looks like an option.
                    guard index < arguments.count, !arguments[index].hasPrefix("-") else { return nil }
                    values[name] = arguments[index]
                    index += 1
                }
            default:
                return nil
            }
        }
        options.store = values["--store"]
        options.container = values["--container"] ?? options.container
        options.database = values["--database"] ?? options.database
        options.logLevel = values["--log-level"] ?? options.logLevel
        options.json = flags.contains("--json")
        guard DatabaseScope(name: options.database) != nil, StoreOptions.logLevels.contains(options.logLevel.lowercased()) else { return nil }
        guard let path = positionals.first else { return nil }
        self.options = options
        if saving {
            let ifTag = values["--if-tag"]
            let allKeys = flags.contains("--all-keys")
            guard let recordType = values["--type"], ifTag?.isEmpty != true, ifTag == nil || !allKeys else { return nil }
            action = .save(path: path, recordType: recordType, fields: Array(positionals.dropFirst()), ifTag: ifTag, allKeys: allKeys)
        } else {
            guard positionals.count == 1 else { return nil }
            action = .get(path: path)
        }
    }

    func run() throws {
        switch action {
        case .get(let path):
            try RecordCommand.Get.get(options, path: path)
        case .save(let path, let recordType, let fields, let ifTag, let allKeys):
            try RecordCommand.Save.save(options, path: path, recordType: recordType, fields: fields, ifTag: ifTag, allKeys: allKeys)
        }
    }
}
