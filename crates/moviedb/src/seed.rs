//! The seed catalogue: 67 movies, 3 TV shows with 57 episodes, the people who made and star in
//! them, 12 accounts, 31 reviews and 5 watch-list entries. Plots, biographies and comments are
//! this project's own words. Ids follow the order of the tables below, from 1.

use crate::domain::{Genre, Role, WatchStatus};

/// A person of the seed.
#[derive(Debug, Clone, Copy)]
pub struct SeedPerson {
    /// Name (unique in the seed).
    pub name: &'static str,
    /// Year of birth.
    pub birth_year: i32,
    /// ISO country code.
    pub country: &'static str,
    /// One-line biography.
    pub bio: &'static str,
}

/// A movie of the seed.
#[derive(Debug, Clone, Copy)]
pub struct SeedMovie {
    /// Title.
    pub title: &'static str,
    /// Year of release.
    pub year: i32,
    /// Genre.
    pub genre: Genre,
    /// Rating, 0–10.
    pub rating: f64,
    /// Minutes.
    pub runtime: i32,
    /// TMDB id.
    pub tmdb: i64,
    /// Plot.
    pub plot: &'static str,
    /// Directors, by name.
    pub directors: &'static [&'static str],
    /// Cast: (name, character).
    pub cast: &'static [(&'static str, &'static str)],
}

/// A TV show of the seed.
#[derive(Debug, Clone, Copy)]
pub struct SeedShow {
    /// Title.
    pub title: &'static str,
    /// Genre.
    pub genre: Genre,
    /// Rating.
    pub rating: f64,
    /// TMDB id.
    pub tmdb: i64,
    /// First year.
    pub start: i32,
    /// Last year.
    pub end: Option<i32>,
    /// Seasons.
    pub seasons: i32,
    /// What it is about.
    pub plot: &'static str,
    /// Creators, by name.
    pub creators: &'static [&'static str],
    /// Cast: (name, character).
    pub cast: &'static [(&'static str, &'static str)],
    /// Episodes: (season, number, title, air year).
    pub episodes: &'static [(i32, i32, &'static str, i32)],
    /// Typical episode length in minutes.
    pub episode_runtime: i32,
}

/// An account of the seed.
#[derive(Debug, Clone, Copy)]
pub struct SeedUser {
    /// Username.
    pub username: &'static str,
    /// Email.
    pub email: &'static str,
    /// Plain password (hashed at seeding).
    pub password: &'static str,
    /// Role.
    pub role: Role,
}

/// What a seed review or watch-list entry is about, by title.
#[derive(Debug, Clone, Copy)]
pub enum SeedTitle {
    /// A movie title of [`MOVIES`].
    Movie(&'static str),
    /// A show title of [`SHOWS`].
    Show(&'static str),
}

/// A review of the seed.
#[derive(Debug, Clone, Copy)]
pub struct SeedReview {
    /// Author.
    pub user: &'static str,
    /// Title.
    pub title: SeedTitle,
    /// Score.
    pub score: i32,
    /// Comment.
    pub comment: &'static str,
}

/// The 12 accounts.
pub fn users() -> Vec<SeedUser> {
    let mut users = vec![
        SeedUser {
            username: "admin",
            email: "admin@moviedb.com",
            password: "admin123",
            role: Role::Admin,
        },
        SeedUser {
            username: "user",
            email: "user@moviedb.com",
            password: "user123",
            role: Role::User,
        },
    ];
    for (username, email) in [
        ("mara", "mara@example.com"),
        ("petra", "petra@example.com"),
        ("dan", "dan@example.com"),
        ("ines", "ines@example.com"),
        ("tomas", "tomas@example.com"),
        ("sofia", "sofia@example.com"),
        ("henrik", "henrik@example.com"),
        ("lucia", "lucia@example.com"),
        ("noor", "noor@example.com"),
        ("viktor", "viktor@example.com"),
    ] {
        users.push(SeedUser {
            username,
            email,
            password: "password",
            role: Role::User,
        });
    }
    users
}

macro_rules! people {
    ($(($name:literal, $year:literal, $country:literal, $bio:literal)),+ $(,)?) => {
        &[$(SeedPerson { name: $name, birth_year: $year, country: $country, bio: $bio }),+]
    };
}

/// The people: directors and creators first, then actors.
pub const PEOPLE: &[SeedPerson] = people![
    (
        "Frank Darabont",
        1959,
        "FR",
        "Writer-director best known for patient prison dramas adapted from Stephen King."
    ),
    (
        "Francis Ford Coppola",
        1939,
        "US",
        "Director of the Godfather trilogy and a pillar of the New Hollywood era."
    ),
    (
        "Robert Zemeckis",
        1952,
        "US",
        "Director who mixes big-hearted storytelling with pioneering visual effects."
    ),
    (
        "Sidney Lumet",
        1924,
        "US",
        "New York director of tense, dialogue-driven dramas about conscience and justice."
    ),
    (
        "John McTiernan",
        1951,
        "US",
        "Action director who defined the modern blockbuster shoot-out."
    ),
    (
        "Renny Harlin",
        1959,
        "FI",
        "Finnish director of loud, fast Hollywood action pictures."
    ),
    (
        "Len Wiseman",
        1973,
        "US",
        "Director who came to features from visual effects and music videos."
    ),
    (
        "John Moore",
        1970,
        "IE",
        "Irish director of military and action thrillers."
    ),
    (
        "Joseph Kosinski",
        1974,
        "US",
        "Director trained in architecture, known for sleek large-format spectacle."
    ),
    (
        "Anthony Russo",
        1970,
        "US",
        "One half of the Russo brothers, directors of Marvel's biggest team-ups."
    ),
    (
        "Joe Russo",
        1971,
        "US",
        "One half of the Russo brothers, co-director of the later Avengers films."
    ),
    (
        "Harold Ramis",
        1944,
        "US",
        "Comedy writer, director and actor behind a string of beloved comedies."
    ),
    (
        "Wes Anderson",
        1969,
        "US",
        "Director of symmetrical, pastel-coloured ensemble comedies."
    ),
    (
        "Billy Wilder",
        1906,
        "AT",
        "Austrian-born writer-director equally at home in comedy and film noir."
    ),
    (
        "Jim Abrahams",
        1944,
        "US",
        "Co-creator of rapid-fire spoof comedies."
    ),
    (
        "David Zucker",
        1947,
        "US",
        "Spoof specialist and one of the trio behind Airplane!."
    ),
    (
        "Jerry Zucker",
        1950,
        "US",
        "Director and producer, co-creator of the spoof genre's classics."
    ),
    (
        "Joel Coen",
        1954,
        "US",
        "Filmmaker who, often with his brother Ethan, blends crime and deadpan comedy."
    ),
    (
        "John Hughes",
        1950,
        "US",
        "Writer-director who made the definitive teen comedies of the 1980s."
    ),
    (
        "Todd Phillips",
        1970,
        "US",
        "Director of raucous comedies and darker character studies."
    ),
    (
        "James Cameron",
        1954,
        "CA",
        "Canadian director of record-breaking science-fiction epics."
    ),
    (
        "Jonathan Mostow",
        1961,
        "US",
        "Director of taut, efficient thrillers."
    ),
    (
        "McG",
        1968,
        "US",
        "Music-video director turned maker of glossy action films."
    ),
    (
        "Alan Taylor",
        1959,
        "US",
        "Prestige-television director who moved into franchise films."
    ),
    (
        "Tim Miller",
        1964,
        "US",
        "Visual-effects veteran who made his name with an irreverent superhero film."
    ),
    (
        "George Lucas",
        1944,
        "US",
        "Creator of Star Wars and a driving force of modern effects technology."
    ),
    (
        "Irvin Kershner",
        1923,
        "US",
        "Director who gave the Star Wars saga its darkest chapter."
    ),
    (
        "Richard Marquand",
        1937,
        "GB",
        "Welsh director who brought the original Star Wars trilogy to a close."
    ),
    (
        "J.J. Abrams",
        1966,
        "US",
        "Producer and director who revived several science-fiction franchises."
    ),
    (
        "Rian Johnson",
        1973,
        "US",
        "Writer-director of puzzle-box mysteries and genre reinventions."
    ),
    (
        "Christopher Nolan",
        1970,
        "GB",
        "British director of cerebral blockbusters about time and memory."
    ),
    (
        "Lana Wachowski",
        1965,
        "US",
        "Co-creator of The Matrix and its world of simulated reality."
    ),
    (
        "Lilly Wachowski",
        1967,
        "US",
        "Co-creator of The Matrix, writer and director."
    ),
    (
        "Denis Villeneuve",
        1967,
        "CA",
        "Canadian director of vast, brooding science fiction."
    ),
    (
        "Martin Scorsese",
        1942,
        "US",
        "Director whose crime films map loyalty, guilt and New York streets."
    ),
    (
        "David Fincher",
        1962,
        "US",
        "Meticulous director of dark thrillers and procedural dramas."
    ),
    (
        "Jonathan Demme",
        1944,
        "US",
        "Humane director who moved easily between thrillers, comedies and concert films."
    ),
    (
        "John Krasinski",
        1979,
        "US",
        "Actor turned director of near-silent suspense."
    ),
    (
        "Stanley Kubrick",
        1928,
        "US",
        "Perfectionist director whose every genre film became a landmark."
    ),
    (
        "Ridley Scott",
        1937,
        "GB",
        "British director of richly designed science fiction and historical epics."
    ),
    (
        "Alfred Hitchcock",
        1899,
        "GB",
        "The master of suspense, whose techniques still shape thrillers."
    ),
    (
        "Jordan Peele",
        1979,
        "US",
        "Comedian turned director of socially sharp horror."
    ),
    (
        "Ari Aster",
        1986,
        "US",
        "Director of unsettling family horror."
    ),
    (
        "Michael Curtiz",
        1886,
        "HU",
        "Hungarian-born studio director of hundreds of films, Casablanca among them."
    ),
    (
        "Damien Chazelle",
        1985,
        "US",
        "Director of films about ambition, music and the price of dreams."
    ),
    (
        "Michel Gondry",
        1963,
        "FR",
        "French director with a handmade, dreamlike visual style."
    ),
    (
        "Rob Reiner",
        1947,
        "US",
        "Director of warm, quotable comedies and dramas."
    ),
    (
        "Peter Jackson",
        1961,
        "NZ",
        "New Zealand director who brought Middle-earth to the screen."
    ),
    (
        "Sergio Leone",
        1929,
        "IT",
        "Italian director who reinvented the western with operatic close-ups."
    ),
    (
        "Clint Eastwood",
        1930,
        "US",
        "Western icon who became an economical, unsentimental director."
    ),
    (
        "David Crane",
        1957,
        "US",
        "Sitcom writer and producer, co-creator of Friends."
    ),
    (
        "Marta Kauffman",
        1956,
        "US",
        "Sitcom writer and producer, co-creator of Friends."
    ),
    (
        "Larry David",
        1947,
        "US",
        "Comedian and writer, co-creator of Seinfeld."
    ),
    (
        "Jerry Seinfeld",
        1954,
        "US",
        "Stand-up comedian who played a version of himself in his own sitcom."
    ),
    (
        "David Benioff",
        1970,
        "US",
        "Novelist and screenwriter, co-creator of the Game of Thrones series."
    ),
    (
        "D. B. Weiss",
        1971,
        "US",
        "Novelist and screenwriter, co-creator of the Game of Thrones series."
    ),
    (
        "Tim Robbins",
        1958,
        "US",
        "Actor and director with a gift for quiet, stubborn characters."
    ),
    (
        "Morgan Freeman",
        1937,
        "US",
        "Actor whose voice became the sound of calm authority."
    ),
    (
        "Marlon Brando",
        1924,
        "US",
        "Actor who changed screen performance with his naturalism."
    ),
    (
        "Al Pacino",
        1940,
        "US",
        "Actor of coiled intensity, forever linked to Michael Corleone."
    ),
    (
        "Robert De Niro",
        1943,
        "US",
        "Actor famous for total transformations, often for Scorsese."
    ),
    (
        "Andy Garcia",
        1956,
        "CU",
        "Cuban-born actor of crime dramas and romantic leads."
    ),
    (
        "Tom Hanks",
        1956,
        "US",
        "Everyman star of comedies and dramas alike."
    ),
    (
        "Robin Wright",
        1966,
        "US",
        "Actor and director, from fairy tales to political drama."
    ),
    (
        "Henry Fonda",
        1905,
        "US",
        "Classic Hollywood star who embodied decency and resolve."
    ),
    (
        "Bruce Willis",
        1955,
        "DE",
        "Action star with a wisecracking, battered charm."
    ),
    (
        "Alan Rickman",
        1946,
        "GB",
        "British actor beloved for his villains and his drawl."
    ),
    (
        "Samuel L. Jackson",
        1948,
        "US",
        "Prolific actor with unmistakable screen presence."
    ),
    (
        "Tom Cruise",
        1962,
        "US",
        "Movie star known for doing his own dangerous stunts."
    ),
    (
        "Miles Teller",
        1987,
        "US",
        "Actor of intense young leads in drama and action."
    ),
    (
        "Robert Downey Jr.",
        1965,
        "US",
        "Actor whose quick wit anchored a superhero franchise."
    ),
    (
        "Chris Evans",
        1981,
        "US",
        "Actor who played a famously earnest super-soldier."
    ),
    ("Bill Murray", 1950, "US", "Comedian of deadpan melancholy."),
    (
        "Andie MacDowell",
        1958,
        "US",
        "Actor of romantic comedies and independent drama."
    ),
    (
        "Ralph Fiennes",
        1962,
        "GB",
        "British actor equally precise as villain and romantic lead."
    ),
    (
        "Marilyn Monroe",
        1926,
        "US",
        "Screen icon of the 1950s with flawless comic timing."
    ),
    (
        "Jack Lemmon",
        1925,
        "US",
        "Actor of nervous, funny and deeply human characters."
    ),
    (
        "Leslie Nielsen",
        1926,
        "CA",
        "Canadian actor who reinvented himself as a deadpan comic."
    ),
    (
        "Jeff Bridges",
        1949,
        "US",
        "Relaxed, versatile actor, forever The Dude."
    ),
    (
        "Matthew Broderick",
        1962,
        "US",
        "Actor of charming, quick-talking young heroes."
    ),
    (
        "Bradley Cooper",
        1975,
        "US",
        "Actor and director from comedy to music drama."
    ),
    (
        "Arnold Schwarzenegger",
        1947,
        "AT",
        "Bodybuilder turned action star and politician."
    ),
    (
        "Linda Hamilton",
        1956,
        "US",
        "Actor who made Sarah Connor an action icon."
    ),
    (
        "Christian Bale",
        1974,
        "GB",
        "British actor known for drastic physical transformations."
    ),
    (
        "Emilia Clarke",
        1986,
        "GB",
        "British actor who rose to fame as a dragon queen."
    ),
    (
        "Mark Hamill",
        1951,
        "US",
        "Actor and voice artist, the original Luke Skywalker."
    ),
    (
        "Harrison Ford",
        1942,
        "US",
        "Star of adventure franchises with a grumpy, roguish charm."
    ),
    (
        "Carrie Fisher",
        1956,
        "US",
        "Actor and sharp-witted writer, forever Princess Leia."
    ),
    (
        "Ewan McGregor",
        1971,
        "GB",
        "Scottish actor of independent films and space sagas."
    ),
    (
        "Natalie Portman",
        1981,
        "IL",
        "Actor who started as a child star and kept taking risks."
    ),
    (
        "Daisy Ridley",
        1992,
        "GB",
        "British actor who led the Star Wars sequel trilogy."
    ),
    (
        "Leonardo DiCaprio",
        1974,
        "US",
        "Leading man of ambitious films by major directors."
    ),
    (
        "Joseph Gordon-Levitt",
        1981,
        "US",
        "Actor and filmmaker of nimble, thoughtful roles."
    ),
    (
        "Matthew McConaughey",
        1969,
        "US",
        "Texan actor who moved from romantic comedy to serious drama."
    ),
    (
        "Anne Hathaway",
        1982,
        "US",
        "Actor of musicals, comedies and science fiction."
    ),
    (
        "Keanu Reeves",
        1964,
        "CA",
        "Actor of calm, soulful action heroes."
    ),
    (
        "Laurence Fishburne",
        1961,
        "US",
        "Actor of commanding mentors and stage roles."
    ),
    (
        "Timothée Chalamet",
        1995,
        "US",
        "Young lead of literary adaptations and epics."
    ),
    (
        "Rebecca Ferguson",
        1983,
        "SE",
        "Swedish actor of spy thrillers and science fiction."
    ),
    (
        "Zendaya",
        1996,
        "US",
        "Actor and singer who grew up on screen."
    ),
    (
        "Ray Liotta",
        1954,
        "US",
        "Actor of volatile, charismatic characters."
    ),
    (
        "Brad Pitt",
        1963,
        "US",
        "Star and producer of wide-ranging films."
    ),
    (
        "Matt Damon",
        1970,
        "US",
        "Actor and writer of thrillers and dramas."
    ),
    (
        "Daniel Craig",
        1968,
        "GB",
        "British actor who played a rugged James Bond and a drawling detective."
    ),
    (
        "Jodie Foster",
        1962,
        "US",
        "Actor and director since childhood, fierce and precise."
    ),
    (
        "Anthony Hopkins",
        1937,
        "GB",
        "Welsh actor of chilling restraint."
    ),
    (
        "Emily Blunt",
        1983,
        "GB",
        "British actor of comedy, action and horror."
    ),
    (
        "Jack Nicholson",
        1937,
        "US",
        "Actor of mischievous, dangerous grins."
    ),
    (
        "Sigourney Weaver",
        1949,
        "US",
        "Actor who made Ellen Ripley the model of a science-fiction heroine."
    ),
    (
        "Anthony Perkins",
        1932,
        "US",
        "Actor forever linked to a motel owner with a secret."
    ),
    (
        "Daniel Kaluuya",
        1989,
        "GB",
        "British actor of sharp, watchful performances."
    ),
    (
        "Toni Collette",
        1972,
        "AU",
        "Australian actor of raw, fearless roles."
    ),
    (
        "Humphrey Bogart",
        1899,
        "US",
        "Hard-boiled star of noir and wartime romance."
    ),
    (
        "Ingrid Bergman",
        1915,
        "SE",
        "Swedish star of luminous romantic dramas."
    ),
    (
        "Ryan Gosling",
        1980,
        "CA",
        "Canadian actor of quiet intensity and unexpected comedy."
    ),
    (
        "Emma Stone",
        1988,
        "US",
        "Actor of expressive comedy and musical roles."
    ),
    (
        "Jim Carrey",
        1962,
        "CA",
        "Rubber-faced comedian who surprised in dramatic roles."
    ),
    (
        "Kate Winslet",
        1975,
        "GB",
        "British actor of period drama and modern character roles."
    ),
    (
        "Billy Crystal",
        1948,
        "US",
        "Comedian, actor and a famous awards-show host."
    ),
    (
        "Meg Ryan",
        1961,
        "US",
        "Star of the romantic comedies of the late 1980s and 1990s."
    ),
    (
        "Fionn Whitehead",
        1997,
        "GB",
        "British actor who debuted in a war epic."
    ),
    (
        "Elijah Wood",
        1981,
        "US",
        "Actor who carried the One Ring for three films."
    ),
    (
        "Ian McKellen",
        1939,
        "GB",
        "British stage and screen actor, wizard and mutant alike."
    ),
    (
        "Viggo Mortensen",
        1958,
        "US",
        "Actor, poet and painter, a reluctant king on screen."
    ),
    (
        "Eli Wallach",
        1915,
        "US",
        "Character actor of colourful scoundrels."
    ),
    (
        "Gene Hackman",
        1930,
        "US",
        "Actor of gruff, powerful everymen and villains."
    ),
    (
        "Hilary Swank",
        1974,
        "US",
        "Actor of physically demanding, determined heroines."
    ),
    (
        "Jennifer Aniston",
        1969,
        "US",
        "Sitcom star turned film lead and producer."
    ),
    (
        "Matthew Perry",
        1969,
        "CA",
        "Comic actor of sarcastic, lovable characters."
    ),
    (
        "David Schwimmer",
        1966,
        "US",
        "Actor and director of comedy and drama."
    ),
    (
        "Julia Louis-Dreyfus",
        1961,
        "US",
        "Comic actor with a record run of sitcom awards."
    ),
    (
        "Jason Alexander",
        1959,
        "US",
        "Actor and singer, famous for a neurotic best friend."
    ),
    (
        "Kit Harington",
        1986,
        "GB",
        "British actor who spent a decade at the Wall."
    ),
    (
        "Peter Dinklage",
        1969,
        "US",
        "Actor of wit and gravity, from indie films to fantasy."
    ),
];

macro_rules! movie {
    ($title:literal, $year:literal, $genre:ident, $rating:literal, $runtime:literal, $tmdb:literal,
     $plot:literal, [$($d:literal),*], [$(($a:literal, $c:literal)),*]) => {
        SeedMovie {
            title: $title,
            year: $year,
            genre: Genre::$genre,
            rating: $rating,
            runtime: $runtime,
            tmdb: $tmdb,
            plot: $plot,
            directors: &[$($d),*],
            cast: &[$(($a, $c)),*],
        }
    };
}

/// The 67 movies, in id order.
pub const MOVIES: &[SeedMovie] = &[
    movie!(
        "The Shawshank Redemption",
        1994,
        Drama,
        9.3,
        142,
        278,
        "Sentenced to life for a murder he says he did not commit, a quiet banker spends two decades in a Maine prison, where friendship and patience become his way out.",
        ["Frank Darabont"],
        [
            ("Tim Robbins", "Andy Dufresne"),
            ("Morgan Freeman", "Ellis 'Red' Redding")
        ]
    ),
    movie!(
        "The Godfather",
        1972,
        Crime,
        9.2,
        175,
        238,
        "The ageing head of a New York crime family hands power to his reluctant youngest son, who turns out to be the most ruthless of them all.",
        ["Francis Ford Coppola"],
        [
            ("Marlon Brando", "Vito Corleone"),
            ("Al Pacino", "Michael Corleone")
        ]
    ),
    movie!(
        "The Godfather Part II",
        1974,
        Crime,
        9.0,
        202,
        240,
        "Michael tightens his grip on the family business while, decades earlier, a young Vito builds his empire on the streets of Little Italy.",
        ["Francis Ford Coppola"],
        [
            ("Al Pacino", "Michael Corleone"),
            ("Robert De Niro", "Vito Corleone")
        ]
    ),
    movie!(
        "The Godfather Part III",
        1990,
        Crime,
        7.6,
        162,
        242,
        "An old Michael Corleone tries to make the family legitimate and finds that the past, and the Church's bankers, will not let him go.",
        ["Francis Ford Coppola"],
        [
            ("Al Pacino", "Michael Corleone"),
            ("Andy Garcia", "Vincent Mancini")
        ]
    ),
    movie!(
        "Forrest Gump",
        1994,
        Drama,
        8.8,
        142,
        13,
        "A kind man of simple means drifts through three decades of American history, never losing his love for the girl he grew up with.",
        ["Robert Zemeckis"],
        [
            ("Tom Hanks", "Forrest Gump"),
            ("Robin Wright", "Jenny Curran")
        ]
    ),
    movie!(
        "12 Angry Men",
        1957,
        Drama,
        9.0,
        96,
        389,
        "In a sweltering jury room, one juror's doubt forces eleven others to look again at a case they thought was closed.",
        ["Sidney Lumet"],
        [("Henry Fonda", "Juror 8")]
    ),
    movie!(
        "Die Hard",
        1988,
        Action,
        8.2,
        132,
        562,
        "A New York cop visiting his estranged wife at a Christmas party ends up alone against a gang of thieves who have taken the skyscraper.",
        ["John McTiernan"],
        [
            ("Bruce Willis", "John McClane"),
            ("Alan Rickman", "Hans Gruber")
        ]
    ),
    movie!(
        "Die Hard 2",
        1990,
        Action,
        7.1,
        124,
        1573,
        "Waiting for his wife's plane on a snowy Christmas Eve, McClane finds mercenaries seizing control of the airport.",
        ["Renny Harlin"],
        [("Bruce Willis", "John McClane")]
    ),
    movie!(
        "Die Hard with a Vengeance",
        1995,
        Action,
        7.7,
        128,
        1572,
        "A bomber with a grudge sends McClane and a reluctant shopkeeper racing across Manhattan to solve his riddles.",
        ["John McTiernan"],
        [
            ("Bruce Willis", "John McClane"),
            ("Samuel L. Jackson", "Zeus Carver")
        ]
    ),
    movie!(
        "Live Free or Die Hard",
        2007,
        Action,
        7.2,
        128,
        1571,
        "An old-school cop and a young hacker try to stop a cyber attack that is switching off the country piece by piece.",
        ["Len Wiseman"],
        [("Bruce Willis", "John McClane")]
    ),
    movie!(
        "A Good Day to Die Hard",
        2013,
        Action,
        5.3,
        98,
        47964,
        "McClane flies to Moscow to help his estranged son and lands in the middle of a nuclear heist.",
        ["John Moore"],
        [("Bruce Willis", "John McClane")]
    ),
    movie!(
        "Top Gun: Maverick",
        2022,
        Action,
        8.3,
        131,
        361743,
        "Decades after flight school, a test pilot who never moved up the ranks is called back to train young aviators for an impossible mission.",
        ["Joseph Kosinski"],
        [
            ("Tom Cruise", "Pete 'Maverick' Mitchell"),
            ("Miles Teller", "Bradley 'Rooster' Bradshaw")
        ]
    ),
    movie!(
        "Avengers: Endgame",
        2019,
        Action,
        8.4,
        181,
        299534,
        "After losing half of all life to a tyrant, the remaining heroes gamble on one last plan to undo the damage.",
        ["Anthony Russo", "Joe Russo"],
        [
            ("Robert Downey Jr.", "Tony Stark"),
            ("Chris Evans", "Steve Rogers")
        ]
    ),
    movie!(
        "Groundhog Day",
        1993,
        Comedy,
        7.6,
        101,
        137,
        "A sour TV weatherman wakes up to the same small-town holiday again and again until he learns to live it well.",
        ["Harold Ramis"],
        [
            ("Bill Murray", "Phil Connors"),
            ("Andie MacDowell", "Rita Hanson")
        ]
    ),
    movie!(
        "The Grand Budapest Hotel",
        2014,
        Comedy,
        8.1,
        99,
        120467,
        "A fastidious concierge and his young lobby boy are caught up in a stolen painting and a family fortune in a fading European resort.",
        ["Wes Anderson"],
        [("Ralph Fiennes", "M. Gustave")]
    ),
    movie!(
        "Some Like It Hot",
        1959,
        Comedy,
        8.2,
        121,
        239,
        "Two musicians who saw a gangland killing hide from the mob by joining an all-women band on its way to Florida.",
        ["Billy Wilder"],
        [
            ("Marilyn Monroe", "Sugar Kane"),
            ("Jack Lemmon", "Jerry / Daphne")
        ]
    ),
    movie!(
        "Airplane!",
        1980,
        Comedy,
        7.3,
        88,
        813,
        "When the crew falls ill, a former pilot afraid of flying must land a packed airliner, surrounded by relentless sight gags.",
        ["Jim Abrahams", "David Zucker", "Jerry Zucker"],
        [("Leslie Nielsen", "Dr. Rumack")]
    ),
    movie!(
        "The Big Lebowski",
        1998,
        Comedy,
        7.8,
        117,
        115,
        "A laid-back bowler in Los Angeles is mistaken for a millionaire with the same name and dragged into a botched kidnapping.",
        ["Joel Coen"],
        [("Jeff Bridges", "Jeffrey 'The Dude' Lebowski")]
    ),
    movie!(
        "Ferris Bueller's Day Off",
        1986,
        Comedy,
        7.6,
        103,
        9377,
        "A high-school charmer fakes being sick and takes his friends on a day-long adventure through Chicago.",
        ["John Hughes"],
        [("Matthew Broderick", "Ferris Bueller")]
    ),
    movie!(
        "The Hangover",
        2009,
        Comedy,
        7.3,
        100,
        18785,
        "Three friends wake up in a wrecked Las Vegas suite with no memory of the night and no sign of the groom.",
        ["Todd Phillips"],
        [("Bradley Cooper", "Phil Wenneck")]
    ),
    movie!(
        "The Terminator",
        1984,
        Scifi,
        8.1,
        107,
        218,
        "A machine assassin is sent back in time to kill a waitress whose unborn son will lead the fight against the machines.",
        ["James Cameron"],
        [
            ("Arnold Schwarzenegger", "The Terminator"),
            ("Linda Hamilton", "Sarah Connor")
        ]
    ),
    movie!(
        "Terminator 2: Judgment Day",
        1991,
        Scifi,
        8.6,
        137,
        280,
        "A reprogrammed terminator protects the young John Connor from a shape-shifting killer while his mother tries to stop the future.",
        ["James Cameron"],
        [
            ("Arnold Schwarzenegger", "The Terminator"),
            ("Linda Hamilton", "Sarah Connor")
        ]
    ),
    movie!(
        "Terminator 3: Rise of the Machines",
        2003,
        Scifi,
        6.3,
        109,
        296,
        "Judgment Day was only postponed, and a grown John Connor is hunted by a new machine.",
        ["Jonathan Mostow"],
        [("Arnold Schwarzenegger", "The Terminator")]
    ),
    movie!(
        "Terminator Salvation",
        2009,
        Scifi,
        6.5,
        115,
        534,
        "In a ruined future, John Connor leads the resistance and meets a stranger who does not know what he is.",
        ["McG"],
        [("Christian Bale", "John Connor")]
    ),
    movie!(
        "Terminator Genisys",
        2015,
        Scifi,
        6.3,
        126,
        87101,
        "A soldier sent back to 1984 finds the timeline already changed and Sarah Connor ready for him.",
        ["Alan Taylor"],
        [
            ("Arnold Schwarzenegger", "The Guardian"),
            ("Emilia Clarke", "Sarah Connor")
        ]
    ),
    movie!(
        "Terminator: Dark Fate",
        2019,
        Scifi,
        6.2,
        128,
        290859,
        "A hardened Sarah Connor joins an enhanced soldier to protect a young woman from a new kind of terminator.",
        ["Tim Miller"],
        [
            ("Linda Hamilton", "Sarah Connor"),
            ("Arnold Schwarzenegger", "Carl")
        ]
    ),
    movie!(
        "Star Wars",
        1977,
        Scifi,
        8.6,
        121,
        11,
        "A farm boy, a smuggler and a captured princess join a rebellion against a galactic empire and its planet-destroying station.",
        ["George Lucas"],
        [
            ("Mark Hamill", "Luke Skywalker"),
            ("Harrison Ford", "Han Solo"),
            ("Carrie Fisher", "Leia Organa")
        ]
    ),
    movie!(
        "The Empire Strikes Back",
        1980,
        Scifi,
        8.7,
        124,
        1891,
        "With the rebels scattered, Luke trains with an old master while his friends run from the Empire into a trap.",
        ["Irvin Kershner"],
        [
            ("Mark Hamill", "Luke Skywalker"),
            ("Harrison Ford", "Han Solo"),
            ("Carrie Fisher", "Leia Organa")
        ]
    ),
    movie!(
        "Return of the Jedi",
        1983,
        Scifi,
        8.3,
        131,
        1892,
        "The rebels rescue their friend and stake everything on one attack, while Luke tries to reach the man inside the dark armour.",
        ["Richard Marquand"],
        [
            ("Mark Hamill", "Luke Skywalker"),
            ("Harrison Ford", "Han Solo"),
            ("Carrie Fisher", "Leia Organa")
        ]
    ),
    movie!(
        "Star Wars: Episode I - The Phantom Menace",
        1999,
        Scifi,
        6.5,
        136,
        1893,
        "Two Jedi protecting a young queen find a slave boy strong in the Force on a desert planet.",
        ["George Lucas"],
        [
            ("Ewan McGregor", "Obi-Wan Kenobi"),
            ("Natalie Portman", "Padmé Amidala")
        ]
    ),
    movie!(
        "Star Wars: Episode II - Attack of the Clones",
        2002,
        Scifi,
        6.6,
        142,
        1894,
        "As the Republic slides toward war, Obi-Wan uncovers a secret army and his apprentice falls for the senator he guards.",
        ["George Lucas"],
        [
            ("Ewan McGregor", "Obi-Wan Kenobi"),
            ("Natalie Portman", "Padmé Amidala")
        ]
    ),
    movie!(
        "Star Wars: Episode III - Revenge of the Sith",
        2005,
        Scifi,
        7.6,
        140,
        1895,
        "The Clone Wars end in betrayal as a gifted Jedi turns to the dark side and the Republic becomes an empire.",
        ["George Lucas"],
        [
            ("Ewan McGregor", "Obi-Wan Kenobi"),
            ("Natalie Portman", "Padmé Amidala")
        ]
    ),
    movie!(
        "Star Wars: The Force Awakens",
        2015,
        Scifi,
        7.8,
        138,
        140607,
        "Thirty years after the Empire's fall, a scavenger and a runaway stormtrooper are pulled into the search for a vanished Jedi.",
        ["J.J. Abrams"],
        [("Daisy Ridley", "Rey"), ("Harrison Ford", "Han Solo")]
    ),
    movie!(
        "Star Wars: The Last Jedi",
        2017,
        Scifi,
        6.9,
        152,
        181808,
        "Rey asks a bitter Luke Skywalker to teach her while the last of the Resistance runs out of fuel and time.",
        ["Rian Johnson"],
        [("Daisy Ridley", "Rey"), ("Mark Hamill", "Luke Skywalker")]
    ),
    movie!(
        "Star Wars: The Rise of Skywalker",
        2019,
        Scifi,
        6.4,
        142,
        181812,
        "The Resistance faces a returned emperor and Rey learns where she comes from.",
        ["J.J. Abrams"],
        [("Daisy Ridley", "Rey")]
    ),
    movie!(
        "Inception",
        2010,
        Scifi,
        8.8,
        148,
        27205,
        "A thief who steals secrets from dreams is offered his old life back if he can plant an idea instead.",
        ["Christopher Nolan"],
        [
            ("Leonardo DiCaprio", "Dom Cobb"),
            ("Joseph Gordon-Levitt", "Arthur")
        ]
    ),
    movie!(
        "Interstellar",
        2014,
        Scifi,
        8.6,
        169,
        157336,
        "With crops failing on Earth, a former pilot leaves his children to search for a new home beyond a wormhole.",
        ["Christopher Nolan"],
        [
            ("Matthew McConaughey", "Cooper"),
            ("Anne Hathaway", "Brand")
        ]
    ),
    movie!(
        "The Matrix",
        1999,
        Scifi,
        8.7,
        136,
        603,
        "A hacker learns that the world he knows is a simulation and that he may be the one to free humanity from it.",
        ["Lana Wachowski", "Lilly Wachowski"],
        [("Keanu Reeves", "Neo"), ("Laurence Fishburne", "Morpheus")]
    ),
    movie!(
        "The Matrix Reloaded",
        2003,
        Scifi,
        7.2,
        138,
        604,
        "As the machines dig toward Zion, Neo seeks the source of the Matrix and meets its architect.",
        ["Lana Wachowski", "Lilly Wachowski"],
        [("Keanu Reeves", "Neo"), ("Laurence Fishburne", "Morpheus")]
    ),
    movie!(
        "The Matrix Revolutions",
        2003,
        Scifi,
        6.8,
        129,
        605,
        "Zion makes its last stand while Neo travels to the machine city to end the war.",
        ["Lana Wachowski", "Lilly Wachowski"],
        [("Keanu Reeves", "Neo")]
    ),
    movie!(
        "The Matrix Resurrections",
        2021,
        Scifi,
        5.7,
        148,
        624860,
        "A famous game designer suspects his hit series is more than a story and follows a white rabbit once more.",
        ["Lana Wachowski"],
        [("Keanu Reeves", "Neo")]
    ),
    movie!(
        "Dune",
        2021,
        Scifi,
        7.9,
        155,
        438631,
        "The heir of a noble house arrives on a desert planet that holds the universe's most precious resource, and a trap.",
        ["Denis Villeneuve"],
        [
            ("Timothée Chalamet", "Paul Atreides"),
            ("Rebecca Ferguson", "Lady Jessica")
        ]
    ),
    movie!(
        "Dune: Part Two",
        2024,
        Scifi,
        8.5,
        166,
        693134,
        "Paul joins the desert people to take revenge on those who destroyed his family, while fearing the holy war he foresees.",
        ["Denis Villeneuve"],
        [("Timothée Chalamet", "Paul Atreides"), ("Zendaya", "Chani")]
    ),
    movie!(
        "Goodfellas",
        1990,
        Crime,
        8.7,
        145,
        769,
        "A boy who always wanted to be a gangster rises through the mob and watches it all unravel.",
        ["Martin Scorsese"],
        [
            ("Ray Liotta", "Henry Hill"),
            ("Robert De Niro", "Jimmy Conway")
        ]
    ),
    movie!(
        "Se7en",
        1995,
        Thriller,
        8.6,
        127,
        807,
        "Two detectives, one about to retire, hunt a killer who stages each murder as one of the seven deadly sins.",
        ["David Fincher"],
        [
            ("Brad Pitt", "David Mills"),
            ("Morgan Freeman", "William Somerset")
        ]
    ),
    movie!(
        "The Departed",
        2006,
        Crime,
        8.5,
        151,
        1422,
        "A cop undercover in a Boston gang and a gangster inside the police race to unmask each other.",
        ["Martin Scorsese"],
        [
            ("Leonardo DiCaprio", "Billy Costigan"),
            ("Matt Damon", "Colin Sullivan")
        ]
    ),
    movie!(
        "Knives Out",
        2019,
        Mystery,
        7.9,
        130,
        546554,
        "When a rich crime novelist dies after his birthday party, a courtly detective questions a family of suspects.",
        ["Rian Johnson"],
        [("Daniel Craig", "Benoit Blanc")]
    ),
    movie!(
        "The Silence of the Lambs",
        1991,
        Thriller,
        8.6,
        118,
        274,
        "A trainee FBI agent seeks the help of an imprisoned cannibal psychiatrist to catch another killer.",
        ["Jonathan Demme"],
        [
            ("Jodie Foster", "Clarice Starling"),
            ("Anthony Hopkins", "Hannibal Lecter")
        ]
    ),
    movie!(
        "Taxi Driver",
        1976,
        Crime,
        8.3,
        114,
        103,
        "A lonely night-shift cabbie in a grimy New York slides toward violence.",
        ["Martin Scorsese"],
        [("Robert De Niro", "Travis Bickle")]
    ),
    movie!(
        "A Quiet Place",
        2018,
        Horror,
        7.5,
        90,
        447332,
        "A family lives in silence on a farm, hiding from creatures that hunt by sound.",
        ["John Krasinski"],
        [
            ("Emily Blunt", "Evelyn Abbott"),
            ("John Krasinski", "Lee Abbott")
        ]
    ),
    movie!(
        "The Shining",
        1980,
        Horror,
        8.4,
        146,
        694,
        "A writer takes his family to look after an empty mountain hotel for the winter, and the hotel takes hold of him.",
        ["Stanley Kubrick"],
        [("Jack Nicholson", "Jack Torrance")]
    ),
    movie!(
        "Alien",
        1979,
        Horror,
        8.5,
        117,
        348,
        "The crew of a cargo ship answers a distress call and brings something aboard.",
        ["Ridley Scott"],
        [("Sigourney Weaver", "Ellen Ripley")]
    ),
    movie!(
        "Psycho",
        1960,
        Horror,
        8.5,
        109,
        539,
        "A secretary on the run stops at a remote motel run by a shy young man and his unseen mother.",
        ["Alfred Hitchcock"],
        [("Anthony Perkins", "Norman Bates")]
    ),
    movie!(
        "Get Out",
        2017,
        Horror,
        7.7,
        104,
        419430,
        "A young photographer's weekend with his girlfriend's welcoming family turns more sinister by the hour.",
        ["Jordan Peele"],
        [("Daniel Kaluuya", "Chris Washington")]
    ),
    movie!(
        "Hereditary",
        2018,
        Horror,
        7.1,
        127,
        493922,
        "After her secretive mother dies, an artist and her family uncover a terrible inheritance.",
        ["Ari Aster"],
        [("Toni Collette", "Annie Graham")]
    ),
    movie!(
        "Casablanca",
        1942,
        Romance,
        8.5,
        102,
        289,
        "In wartime Morocco, a cynical club owner must choose between the woman he loved and the cause her husband serves.",
        ["Michael Curtiz"],
        [
            ("Humphrey Bogart", "Rick Blaine"),
            ("Ingrid Bergman", "Ilsa Lund")
        ]
    ),
    movie!(
        "La La Land",
        2016,
        Romance,
        7.9,
        128,
        313369,
        "A jazz pianist and an aspiring actress fall in love in Los Angeles while chasing dreams that pull them apart.",
        ["Damien Chazelle"],
        [("Ryan Gosling", "Sebastian"), ("Emma Stone", "Mia")]
    ),
    movie!(
        "Eternal Sunshine of the Spotless Mind",
        2004,
        Romance,
        8.3,
        108,
        38,
        "After a painful break-up, a shy man has his memories of his ex erased and tries to hold on to them halfway through.",
        ["Michel Gondry"],
        [
            ("Jim Carrey", "Joel Barish"),
            ("Kate Winslet", "Clementine Kruczynski")
        ]
    ),
    movie!(
        "When Harry Met Sally...",
        1989,
        Romance,
        7.6,
        96,
        639,
        "Over twelve years of chance meetings, two New Yorkers argue about whether men and women can just be friends.",
        ["Rob Reiner"],
        [
            ("Billy Crystal", "Harry Burns"),
            ("Meg Ryan", "Sally Albright")
        ]
    ),
    movie!(
        "Dunkirk",
        2017,
        War,
        7.9,
        106,
        374720,
        "On land, at sea and in the air, soldiers and civilians race to evacuate an army trapped on a French beach.",
        ["Christopher Nolan"],
        [("Fionn Whitehead", "Tommy")]
    ),
    movie!(
        "The Lord of the Rings: The Fellowship of the Ring",
        2001,
        Fantasy,
        8.8,
        178,
        120,
        "A hobbit inherits a ring of terrible power and sets out with eight companions to destroy it.",
        ["Peter Jackson"],
        [
            ("Elijah Wood", "Frodo Baggins"),
            ("Ian McKellen", "Gandalf")
        ]
    ),
    movie!(
        "The Lord of the Rings: The Two Towers",
        2002,
        Fantasy,
        8.8,
        179,
        121,
        "The fellowship is broken: two hobbits push on toward Mordor while their friends defend a kingdom under siege.",
        ["Peter Jackson"],
        [
            ("Elijah Wood", "Frodo Baggins"),
            ("Ian McKellen", "Gandalf")
        ]
    ),
    movie!(
        "The Lord of the Rings: The Return of the King",
        2003,
        Fantasy,
        9.0,
        201,
        122,
        "As the armies of the west make their stand, Frodo and Sam climb the last miles to the mountain of fire.",
        ["Peter Jackson"],
        [
            ("Elijah Wood", "Frodo Baggins"),
            ("Viggo Mortensen", "Aragorn")
        ]
    ),
    movie!(
        "The Good, the Bad and the Ugly",
        1966,
        Western,
        8.8,
        178,
        429,
        "Three gunmen who trust no one race each other across the Civil War to a grave full of gold.",
        ["Sergio Leone"],
        [("Clint Eastwood", "Blondie"), ("Eli Wallach", "Tuco")]
    ),
    movie!(
        "Unforgiven",
        1992,
        Western,
        8.2,
        130,
        33,
        "A retired gunfighter, now a struggling farmer, takes one last bounty and faces what he used to be.",
        ["Clint Eastwood"],
        [
            ("Clint Eastwood", "William Munny"),
            ("Gene Hackman", "Little Bill Daggett")
        ]
    ),
    movie!(
        "Million Dollar Baby",
        2004,
        Drama,
        8.1,
        132,
        70,
        "A gruff boxing trainer reluctantly takes on a determined young woman and becomes the family she never had.",
        ["Clint Eastwood"],
        [
            ("Hilary Swank", "Maggie Fitzgerald"),
            ("Clint Eastwood", "Frankie Dunn")
        ]
    ),
    movie!(
        "Gran Torino",
        2008,
        Drama,
        8.1,
        116,
        13223,
        "A widowed veteran who keeps to himself slowly befriends the immigrant family next door and stands up for them.",
        ["Clint Eastwood"],
        [("Clint Eastwood", "Walt Kowalski")]
    ),
];

/// The 3 TV shows.
pub const SHOWS: &[SeedShow] = &[
    SeedShow {
        title: "Friends",
        genre: Genre::Comedy,
        rating: 8.9,
        tmdb: 1668,
        start: 1994,
        end: Some(2004),
        seasons: 10,
        plot: "Six friends in Manhattan share apartments, jobs, break-ups and a favourite coffee shop through their twenties and thirties.",
        creators: &["David Crane", "Marta Kauffman"],
        cast: &[
            ("Jennifer Aniston", "Rachel Green"),
            ("Matthew Perry", "Chandler Bing"),
            ("David Schwimmer", "Ross Geller"),
        ],
        episodes: &[
            (1, 1, "The One Where Monica Gets a Roommate", 1994),
            (1, 2, "The One with the Sonogram at the End", 1994),
            (1, 3, "The One with the Thumb", 1994),
            (1, 4, "The One with George Stephanopoulos", 1994),
            (1, 5, "The One with the East German Laundry Detergent", 1994),
            (1, 6, "The One with the Butt", 1994),
            (1, 7, "The One with the Blackout", 1994),
            (1, 8, "The One Where Nana Dies Twice", 1994),
            (1, 9, "The One Where Underdog Gets Away", 1994),
            (1, 10, "The One with the Monkey", 1994),
            (2, 1, "The One with Ross's New Girlfriend", 1995),
            (2, 7, "The One Where Ross Finds Out", 1995),
            (2, 14, "The One with the Prom Video", 1996),
            (3, 2, "The One Where No One's Ready", 1996),
            (4, 12, "The One with the Embryos", 1998),
            (5, 8, "The One with All the Thanksgivings", 1998),
            (5, 14, "The One Where Everybody Finds Out", 1999),
            (6, 9, "The One Where Ross Got High", 1999),
            (7, 1, "The One with Monica's Thunder", 2000),
            (8, 9, "The One with the Rumor", 2001),
            (9, 1, "The One Where No One Proposes", 2002),
            (10, 17, "The Last One", 2004),
        ],
        episode_runtime: 22,
    },
    SeedShow {
        title: "Seinfeld",
        genre: Genre::Comedy,
        rating: 8.8,
        tmdb: 1400,
        start: 1989,
        end: Some(1998),
        seasons: 9,
        plot: "A stand-up comedian and his three self-absorbed friends turn the smallest annoyances of New York life into elaborate disasters.",
        creators: &["Larry David", "Jerry Seinfeld"],
        cast: &[
            ("Jerry Seinfeld", "Jerry Seinfeld"),
            ("Julia Louis-Dreyfus", "Elaine Benes"),
            ("Jason Alexander", "George Costanza"),
        ],
        episodes: &[
            (1, 1, "The Seinfeld Chronicles", 1989),
            (1, 2, "The Stake Out", 1990),
            (1, 3, "The Robbery", 1990),
            (1, 4, "Male Unbonding", 1990),
            (1, 5, "The Stock Tip", 1990),
            (2, 1, "The Ex-Girlfriend", 1991),
            (2, 11, "The Chinese Restaurant", 1991),
            (3, 6, "The Parking Garage", 1991),
            (3, 14, "The Pez Dispenser", 1992),
            (4, 11, "The Contest", 1992),
            (5, 2, "The Puffy Shirt", 1993),
            (5, 14, "The Marine Biologist", 1994),
            (5, 22, "The Opposite", 1994),
            (7, 6, "The Soup Nazi", 1995),
            (8, 3, "The Bizarro Jerry", 1996),
            (8, 19, "The Yada Yada", 1997),
            (9, 23, "The Finale", 1998),
        ],
        episode_runtime: 23,
    },
    SeedShow {
        title: "Game of Thrones",
        genre: Genre::Fantasy,
        rating: 9.2,
        tmdb: 1399,
        start: 2011,
        end: Some(2019),
        seasons: 8,
        plot: "Noble houses scheme and fight for the Iron Throne while an ancient threat gathers beyond the great northern Wall.",
        creators: &["David Benioff", "D. B. Weiss"],
        cast: &[
            ("Emilia Clarke", "Daenerys Targaryen"),
            ("Kit Harington", "Jon Snow"),
            ("Peter Dinklage", "Tyrion Lannister"),
        ],
        episodes: &[
            (1, 1, "Winter Is Coming", 2011),
            (1, 9, "Baelor", 2011),
            (1, 10, "Fire and Blood", 2011),
            (2, 9, "Blackwater", 2012),
            (3, 4, "And Now His Watch Is Ended", 2013),
            (3, 9, "The Rains of Castamere", 2013),
            (4, 2, "The Lion and the Rose", 2014),
            (4, 8, "The Mountain and the Viper", 2014),
            (4, 10, "The Children", 2014),
            (5, 8, "Hardhome", 2015),
            (6, 9, "Battle of the Bastards", 2016),
            (6, 10, "The Winds of Winter", 2016),
            (7, 1, "Dragonstone", 2017),
            (7, 6, "Beyond the Wall", 2017),
            (7, 7, "The Dragon and the Wolf", 2017),
            (8, 2, "A Knight of the Seven Kingdoms", 2019),
            (8, 3, "The Long Night", 2019),
            (8, 6, "The Iron Throne", 2019),
        ],
        episode_runtime: 60,
    },
];

const SHAWSHANK: SeedTitle = SeedTitle::Movie("The Shawshank Redemption");
const INCEPTION: SeedTitle = SeedTitle::Movie("Inception");
const MATRIX: SeedTitle = SeedTitle::Movie("The Matrix");
const GODFATHER: SeedTitle = SeedTitle::Movie("The Godfather");
const GROUNDHOG: SeedTitle = SeedTitle::Movie("Groundhog Day");
const LA_LA_LAND: SeedTitle = SeedTitle::Movie("La La Land");

macro_rules! reviews {
    ($(($user:literal, $title:expr, $score:literal, $comment:literal)),+ $(,)?) => {
        &[$(SeedReview { user: $user, title: $title, score: $score, comment: $comment }),+]
    };
}

/// The 31 reviews.
pub const REVIEWS: &[SeedReview] = reviews![
    (
        "admin",
        SHAWSHANK,
        10,
        "A story about hope that earns every minute of its ending."
    ),
    (
        "user",
        SHAWSHANK,
        9,
        "The first hour is slow, but the payoff is worth the patience."
    ),
    (
        "mara",
        SHAWSHANK,
        10,
        "Freeman's narration carries you through two decades of prison life."
    ),
    (
        "petra",
        SHAWSHANK,
        8,
        "Beautifully made, though the slow first hour tested me."
    ),
    (
        "dan",
        SHAWSHANK,
        10,
        "Hope as a dangerous thing, then as the only thing. Perfect."
    ),
    (
        "ines",
        SHAWSHANK,
        9,
        "The narration is warm and wry; the friendship at its centre feels real."
    ),
    (
        "tomas",
        SHAWSHANK,
        9,
        "Patient storytelling and a finale full of hope."
    ),
    (
        "sofia",
        SHAWSHANK,
        10,
        "I rewatch it whenever I need a reminder about hope."
    ),
    (
        "admin",
        INCEPTION,
        9,
        "That ending still sparks arguments at every dinner party."
    ),
    (
        "user",
        INCEPTION,
        8,
        "The score rattles the seats; the heist plot is clever."
    ),
    (
        "mara",
        INCEPTION,
        9,
        "Practical effects like the rotating hallway make it feel solid."
    ),
    (
        "henrik",
        INCEPTION,
        7,
        "Lots of exposition, but the ending and the score stay with you."
    ),
    (
        "lucia",
        INCEPTION,
        9,
        "Dreams within dreams, held together by a pounding score."
    ),
    (
        "noor",
        INCEPTION,
        8,
        "Smart, loud, and that spinning top at the ending is perfect."
    ),
    (
        "admin",
        MATRIX,
        10,
        "Bullet time changed action scenes forever."
    ),
    (
        "user",
        MATRIX,
        9,
        "Still thrilling; only the computer screens show their ageing."
    ),
    (
        "petra",
        MATRIX,
        9,
        "The lobby shoot-out and bullet time remain iconic."
    ),
    (
        "dan",
        MATRIX,
        8,
        "Some effects show their ageing, yet the ideas hold up."
    ),
    (
        "viktor",
        MATRIX,
        8,
        "Great on its own; the sequels dilute the mystery."
    ),
    (
        "admin",
        GODFATHER,
        10,
        "Every scene is a lesson in family, power and quiet menace."
    ),
    ("mara", GODFATHER, 9, "Long, patient and utterly gripping."),
    (
        "user",
        GROUNDHOG,
        9,
        "Funny, then unexpectedly moving about becoming a better person."
    ),
    (
        "ines",
        GROUNDHOG,
        8,
        "Murray's sarcasm slowly melts; a clever loop comedy."
    ),
    (
        "sofia",
        GROUNDHOG,
        9,
        "Warm comedy with a surprising amount of philosophy."
    ),
    (
        "noor",
        GROUNDHOG,
        8,
        "Repetition has never been this entertaining."
    ),
    (
        "admin",
        LA_LA_LAND,
        9,
        "Colourful musical numbers and a bittersweet final dance."
    ),
    (
        "lucia",
        LA_LA_LAND,
        8,
        "The songs are catchy and the ending hurts in a good way."
    ),
    (
        "viktor",
        LA_LA_LAND,
        8,
        "Gorgeous to look at, with a jazz heart."
    ),
    (
        "admin",
        SeedTitle::Show("Friends"),
        8,
        "Comfort television; the early seasons are the best."
    ),
    (
        "user",
        SeedTitle::Show("Seinfeld"),
        9,
        "A show about nothing that is about everything."
    ),
    (
        "admin",
        SeedTitle::Show("Game of Thrones"),
        7,
        "Stunning for years, rushed at the very end."
    ),
];

/// The 5 watch-list entries: (user, title, status).
pub const WATCHLIST: &[(&str, SeedTitle, WatchStatus)] = &[
    ("admin", INCEPTION, WatchStatus::Watched),
    (
        "admin",
        SeedTitle::Show("Game of Thrones"),
        WatchStatus::WantToWatch,
    ),
    ("user", MATRIX, WatchStatus::Watched),
    ("user", SHAWSHANK, WatchStatus::WantToWatch),
    (
        "user",
        SeedTitle::Show("Seinfeld"),
        WatchStatus::WantToWatch,
    ),
];

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::*;

    #[test]
    fn the_catalogue_has_the_documented_shape() {
        assert_eq!(MOVIES.len(), 67);
        assert_eq!(SHOWS.len(), 3);
        assert_eq!(
            SHOWS.iter().map(|s| s.episodes.len()).collect::<Vec<_>>(),
            vec![22, 17, 18]
        );
        assert_eq!(REVIEWS.len(), 31);
        assert_eq!(users().len(), 12);
        assert_eq!(WATCHLIST.len(), 5);
        assert_eq!(PEOPLE.len(), 134);
        let mut genres: BTreeMap<&str, usize> = BTreeMap::new();
        for m in MOVIES {
            *genres.entry(m.genre.as_str()).or_default() += 1;
        }
        let expected: BTreeMap<&str, usize> = [
            ("SCIFI", 23),
            ("ACTION", 7),
            ("COMEDY", 7),
            ("CRIME", 6),
            ("HORROR", 6),
            ("DRAMA", 5),
            ("ROMANCE", 4),
            ("FANTASY", 3),
            ("THRILLER", 2),
            ("WESTERN", 2),
            ("MYSTERY", 1),
            ("WAR", 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(genres, expected);
    }

    #[test]
    fn every_name_resolves_and_reviews_are_one_per_user_and_title() {
        let people: HashSet<&str> = PEOPLE.iter().map(|p| p.name).collect();
        assert_eq!(people.len(), PEOPLE.len(), "names are unique");
        for m in MOVIES {
            for name in m.directors.iter().chain(m.cast.iter().map(|(n, _)| n)) {
                assert!(people.contains(name), "{name} of {}", m.title);
            }
        }
        for s in SHOWS {
            for name in s.creators.iter().chain(s.cast.iter().map(|(n, _)| n)) {
                assert!(people.contains(name), "{name} of {}", s.title);
            }
        }
        let users: HashSet<&str> = users().iter().map(|u| u.username).collect();
        let mut seen = HashSet::new();
        for r in REVIEWS {
            assert!(users.contains(r.user));
            let key = (r.user, format!("{:?}", r.title));
            assert!(seen.insert(key), "{} reviewed {:?} twice", r.user, r.title);
        }
        let scores = |title: &str| -> Vec<i32> {
            REVIEWS
                .iter()
                .filter(|r| matches!(r.title, SeedTitle::Movie(t) if t == title))
                .map(|r| r.score)
                .collect()
        };
        assert_eq!(
            scores("The Shawshank Redemption"),
            vec![10, 9, 10, 8, 10, 9, 9, 10]
        );
        assert_eq!(scores("Inception"), vec![9, 8, 9, 7, 9, 8]);
        assert_eq!(scores("The Matrix").iter().sum::<i32>(), 44);
        assert_eq!(scores("Groundhog Day").iter().sum::<i32>(), 34);
        assert_eq!(scores("La La Land").iter().sum::<i32>(), 25);
        assert_eq!(scores("Forrest Gump").len(), 0);
    }
}
